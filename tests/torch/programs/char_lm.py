#!/usr/bin/python3
"""A character-level language model written the way users write one: a Dataset over a text, a DataLoader
with two persistent worker processes, a causal TransformerEncoder (pre-norm, dropout), AdamW, a warmup then
cosine schedule, gradient clipping, an evaluation pass every few steps and a checkpoint (torch.save) every
few more. Its evaluation passes begin as a training step does (the same forward call-sites) and leave it
where dropout is off: the step detector begins them as steps and starts the step over after them."""
import math
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

from common import parser, report, setup, step_marker

TEXT = "the quick brown fox jumps over the lazy dog. " * 400 + "pack my box with five dozen liquor jugs. " * 300


class Chunks(Dataset):
    def __init__(self, data, block):
        self.data, self.block = data, block

    def __len__(self):
        return len(self.data) - self.block - 1

    def __getitem__(self, i):
        return self.data[i:i + self.block], self.data[i + 1:i + 1 + self.block]


class CharLM(nn.Module):
    def __init__(self, vocab, width, heads, layers, block):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, block, width))
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", torch.triu(torch.full((block, block), float("-inf")), 1))

    def forward(self, x):
        n = x.size(1)
        return self.head(self.encoder(self.tok(x) + self.pos[:, :n], mask=self.mask[:n, :n]))


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--block", type=int, default=128)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=10, help="evaluate after every K-th step (0: never)")
    p.add_argument("--save-every", type=int, default=15, help="save a checkpoint after every K-th step (0: never)")
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)

    chars = sorted(set(TEXT))
    data = torch.tensor([chars.index(c) for c in TEXT], dtype=torch.long)
    g = torch.Generator().manual_seed(args.seed + 1)
    loader = DataLoader(Chunks(data, args.block), batch_size=args.batch, shuffle=True, num_workers=args.workers,
                        generator=g, persistent_workers=args.workers > 0, drop_last=True)
    model = CharLM(len(chars), args.width, 4, args.layers, args.block)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    warmup = 5
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / args.steps)))
    checkpoint = os.path.join(tempfile.mkdtemp(prefix="char_lm-"), "checkpoint.pt")
    batches = iter(loader)
    losses = []
    for step in range(args.steps):
        mark()
        model.train()
        x, y = next(batches)
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if args.eval_every and step % args.eval_every == args.eval_every - 1:
            model.eval()
            with torch.no_grad():
                ex, ey = next(batches)
                val = nn.functional.cross_entropy(model(ex).flatten(0, 1), ey.flatten()).item()
            if not args.quiet:
                print(f"after step {step} validation loss {val:.6f}")
        if args.save_every and step % args.save_every == args.save_every - 1:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, checkpoint)
    if os.path.exists(checkpoint):
        os.remove(checkpoint)
    os.rmdir(os.path.dirname(checkpoint))
    report(args, "char_lm", losses)


if __name__ == "__main__":
    main()
