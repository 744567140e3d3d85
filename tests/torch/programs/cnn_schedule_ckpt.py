#!/usr/bin/python3
"""A small CNN with the trimmings of a real training script: SGD with momentum and weight decay, a
learning-rate schedule (linear warm-up, then cosine), a batch size that changes (a smaller last batch of
each epoch), and a checkpoint (model, optimizer and scheduler state) saved with torch.save every few
steps."""
import math
import os
import tempfile

import torch
import torch.nn as nn

from common import parser, report, setup, step_marker


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epoch-samples", type=int, default=80, help="samples per epoch (the last batch is smaller)")
    p.add_argument("--save-every", type=int, default=4, help="checkpoint after every K-th step (0: never)")
    p.add_argument("--channels", type=int, default=16)
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)

    c = args.channels
    model = nn.Sequential(
        nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(2 * c, 4 * c, 3, padding=1), nn.BatchNorm2d(4 * c), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * c, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    warmup = 3
    total = args.steps

    def lr_factor(step):  # linear warm-up, then cosine decay
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(total - warmup, 1)))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    criterion = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(args.epoch_samples, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (args.epoch_samples,), generator=g)

    def batches():
        while True:
            order = torch.randperm(args.epoch_samples, generator=g)
            for i in range(0, args.epoch_samples, args.batch):
                idx = order[i:i + args.batch]
                yield images[idx], labels[idx]

    losses = []
    with tempfile.TemporaryDirectory() as ckpt_dir:
        for step, (x, y) in zip(range(args.steps), batches()):
            mark()
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            if args.save_every and (step + 1) % args.save_every == 0:
                torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict()}, os.path.join(ckpt_dir, "last.pt"))
    report(args, "cnn_schedule_ckpt", losses)


if __name__ == "__main__":
    main()
