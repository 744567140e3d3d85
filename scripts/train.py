#!/usr/bin/python3
"""A small, deterministic PyTorch (CPU) training run: the workload Sentinel is tested and measured on.

Every run with the same arguments computes the same losses bit for bit; the tests compare the loss
sequence of a run under Sentinel with one without it. Data is synthetic and generated inside each step
(as a data loader would hand over a fresh batch), so no download is needed.

Models: mlp (N x Linear+ReLU), cnn (Conv/BatchNorm/ReLU/Pool), lstm (2-layer LSTM classifier),
transformer (TransformerEncoder with self-attention).
"""
import argparse
import ctypes
import json
import sys
import time

import torch
import torch.nn as nn


def build(args):
    if args.model == "mlp":
        layers, width = [], args.width
        for i in range(args.depth):
            layers += [nn.Linear(args.features if i == 0 else width, width), nn.ReLU()]
        layers.append(nn.Linear(width, args.classes))
        model = nn.Sequential(*layers)
        shape = (args.batch, args.features)
    elif args.model == "cnn":
        c = args.channels
        model = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * c, 4 * c, 3, padding=1), nn.BatchNorm2d(4 * c), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * c, args.classes))
        shape = (args.batch, 3, args.image, args.image)
    elif args.model == "lstm":
        class LSTMClassifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(args.features, args.width, num_layers=2, batch_first=True)
                self.head = nn.Linear(args.width, args.classes)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out[:, -1])
        model = LSTMClassifier()
        shape = (args.batch, args.seq, args.features)
    elif args.model == "transformer":
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                layer = nn.TransformerEncoderLayer(args.width, nhead=4, dim_feedforward=2 * args.width,
                                                   dropout=0.0, batch_first=True)
                self.proj = nn.Linear(args.features, args.width)
                self.encoder = nn.TransformerEncoder(layer, num_layers=args.depth)
                self.head = nn.Linear(args.width, args.classes)

            def forward(self, x):
                return self.head(self.encoder(self.proj(x)).mean(dim=1))
        model = Encoder()
        shape = (args.batch, args.seq, args.features)
    else:
        raise SystemExit(f"unknown model {args.model}")
    return model, shape


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn", "lstm", "transformer"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--features", type=int, default=1024)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--channels", type=int, default=32)
    p.add_argument("--image", type=int, default=32)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: PyTorch's default)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--mark-steps", action="store_true",
                   help="tell Sentinel where steps begin (sentinel_step_begin) instead of detecting them")
    p.add_argument("--eval-every", type=int, default=0,
                   help="after every K-th step, an evaluation pass (torch.no_grad) on a fresh batch")
    p.add_argument("--odd-batch-every", type=int, default=0,
                   help="every K-th step trains on a batch of half the size (a ragged last batch, say)")
    p.add_argument("--out", help="write losses and step times as JSON here")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model, shape = build(args)
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    data_gen = torch.Generator().manual_seed(args.seed + 1)

    step_begin = None
    if args.mark_steps:
        step_begin = getattr(ctypes.CDLL(None), "sentinel_step_begin", None)
        if step_begin is None:
            print("note: Sentinel is not loaded; --mark-steps has no effect", file=sys.stderr)

    losses, times, eval_losses = [], [], []
    for step in range(args.steps):
        if step_begin is not None:
            step_begin()
        t0 = time.perf_counter()
        batch = args.batch
        if args.odd_batch_every and (step + 1) % args.odd_batch_every == 0:
            batch = max(1, args.batch // 2)
        x = torch.randn((batch,) + tuple(shape[1:]), generator=data_gen)
        y = torch.randint(0, args.classes, (batch,), generator=data_gen)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        value = loss.item()
        times.append(time.perf_counter() - t0)
        losses.append(value.hex())
        if not args.quiet:
            print(f"step {step} loss {value:.6f} ({value.hex()}) {times[-1] * 1e3:.1f} ms", flush=True)
        if args.eval_every and (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                xe = torch.randn(shape, generator=data_gen)
                ye = torch.randint(0, args.classes, (args.batch,), generator=data_gen)
                eval_losses.append(loss_fn(model(xe), ye).item().hex())
            model.train()

    steady = sorted(times[1:]) or times
    median_ms = steady[len(steady) // 2] * 1e3
    print(f"trained {args.model}: {args.steps} steps, median step {median_ms:.1f} ms, "
          f"final loss {float.fromhex(losses[-1]):.6f}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"model": args.model, "steps": args.steps, "losses": losses,
                       "eval_losses": eval_losses, "step_seconds": times}, f)


if __name__ == "__main__":
    main()
