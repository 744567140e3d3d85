#!/usr/bin/python3
"""A Transformer text classifier written the way users write one: token ids and labels in a TensorDataset, a
DataLoader that shuffles, a post-norm TransformerEncoder with dropout, Adam, a cosine schedule, gradient
clipping, and an evaluation pass on a larger batch every few steps (accuracy under no_grad, the encoder's
eval fast path). The detector takes that pass's first births for the next step's start and begins the step
over at the training forward; profiled, both passes' births landed on the same events, and managed mode left
its plan at every step (docs/results.md, "Not done here")."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from common import parser, report, setup, step_marker


class Classifier(nn.Module):
    def __init__(self, vocab, width, layers, seq, classes):
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, seq, width))
        layer = nn.TransformerEncoderLayer(width, 6, 4 * width, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        return self.head(self.enc(self.emb(tokens) + self.pos).mean(dim=1))


def main():
    p = parser(__doc__)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=192)
    p.add_argument("--seq", type=int, default=96)
    p.add_argument("--batch", type=int, default=24)
    p.add_argument("--eval-every", type=int, default=5)
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    vocab, classes = 2000, 10
    x = torch.randint(0, vocab, (args.batch * args.steps, args.seq))
    y = torch.randint(0, classes, (args.batch * args.steps,))
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch, shuffle=True, drop_last=True,
                        generator=torch.Generator().manual_seed(args.seed + 1))
    model = Classifier(vocab, args.width, args.layers, args.seq, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for step, (tokens, labels) in enumerate(loader):
        mark()
        model.train()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(tokens), labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if args.eval_every and step % args.eval_every == args.eval_every - 1:
            model.eval()
            with torch.no_grad():
                accuracy = (model(x[:2 * args.batch]).argmax(1) == y[:2 * args.batch]).float().mean().item()
            if not args.quiet:
                print(f"step {step} accuracy {accuracy:.3f}")
    report(args, "text_classifier", losses)


if __name__ == "__main__":
    main()
