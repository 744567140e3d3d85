#!/usr/bin/python3
"""A word-level language model: embedding, multi-layer GRU (or LSTM), a linear decoder over the
vocabulary; Adam with gradient clipping, truncated back-propagation through time with the hidden state
carried (detached) from one batch to the next, as in the classic word_language_model example."""
import torch
import torch.nn as nn

from common import parser, report, setup, step_marker


class LanguageModel(nn.Module):
    def __init__(self, cell, vocab, embed, hidden, layers):
        super().__init__()
        self.encoder = nn.Embedding(vocab, embed)
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(embed, hidden, num_layers=layers)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens, hidden):
        out, hidden = self.rnn(self.encoder(tokens), hidden)
        return self.decoder(out), hidden


def detach(h):
    return tuple(x.detach() for x in h) if isinstance(h, tuple) else h.detach()


def main():
    p = parser(__doc__)
    p.add_argument("--cell", default="gru", choices=["gru", "lstm"])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--vocab", type=int, default=2000)
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)

    model = LanguageModel(args.cell, args.vocab, 64, 128, args.layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    criterion = nn.CrossEntropyLoss()
    # A synthetic corpus, batchified as (time, batch) like the word_language_model example.
    corpus = torch.randint(0, args.vocab, ((args.steps + 1) * args.seq + 1, args.batch))
    hidden = None
    losses = []
    for step in range(args.steps):
        mark()
        i = step * args.seq
        data, target = corpus[i:i + args.seq], corpus[i + 1:i + 1 + args.seq]
        if hidden is not None:
            hidden = detach(hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, args.vocab), target.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        losses.append(loss.item())
    report(args, f"{args.cell}_lm", losses)


if __name__ == "__main__":
    main()
