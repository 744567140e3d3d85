#!/usr/bin/python3
"""A sequence classifier over batches of different lengths: every batch is padded to its own longest
sequence, as a collate function of an NLP data loader does, so the sequence length changes from step
to step (batches are bucketed by length). With --packed the padded batch goes through pack_padded_sequence, so the recurrent layers
also see a shrinking batch along time."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

from common import parser, report, setup, step_marker


class Classifier(nn.Module):
    def __init__(self, cell, features, hidden, layers, classes, packed):
        super().__init__()
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(features, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, classes)
        self.packed = packed

    def forward(self, x, lengths):
        if self.packed:
            x = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, h = self.rnn(x)
        if isinstance(h, tuple):
            h = h[0]
        return self.head(h[-1])


def collate(samples):
    seqs = [s for s, _ in samples]
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True), lengths, torch.stack([y for _, y in samples])


def main():
    p = parser(__doc__)
    p.add_argument("--cell", default="lstm", choices=["gru", "lstm"])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--packed", action="store_true")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--min-len", type=int, default=8)
    p.add_argument("--max-len", type=int, default=24)
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)

    features, classes = 32, 5
    model = Classifier(args.cell, features, 96, args.layers, classes, args.packed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed + 1)
    dataset = []
    for _ in range(args.steps * args.batch):
        n = int(torch.randint(args.min_len, args.max_len + 1, (1,), generator=g))
        dataset.append((torch.randn(n, features, generator=g), torch.randint(0, classes, (), generator=g)))
    # Bucketing, as NLP loaders do to save padding: batches of similar lengths, in random order, so
    # the padded length changes from batch to batch.
    dataset.sort(key=lambda sample: len(sample[0]))
    batches = [dataset[i:i + args.batch] for i in range(0, len(dataset), args.batch)]
    batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
    losses = []
    for step in range(args.steps):
        mark()
        x, lengths, y = collate(batches[step])
        optimizer.zero_grad()
        loss = criterion(model(x, lengths), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    report(args, f"{args.cell}_varlen{'_packed' if args.packed else ''}", losses)


if __name__ == "__main__":
    main()
