#!/usr/bin/python3
"""A data-parallel MLP (torch.distributed, gloo backend, env:// rendezvous): one process per rank, launched
with MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK set (what torchrun sets; Debian's torch
1.13 torchrun fails on Python 3.11). Each rank trains on its own shard; gradients are averaged by DDP.
With --arch NAME, a torchvision model (torchvision.models.NAME, 10 classes) on random images instead of the
MLP, as users write one."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from common import mlp, parser, report, setup, step_marker


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, help="default 64 (the MLP) or 8 (--arch)")
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--arch", help="a torchvision model instead of the MLP (--batch then defaults to 8)")
    p.add_argument("--size", type=int, default=64, help="with --arch: image height and width")
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    features, classes = 256, 10
    batch = args.batch or (8 if args.arch else 64)
    if args.arch:
        import torchvision
        model = DistributedDataParallel(getattr(torchvision.models, args.arch)(num_classes=classes))
        shape = (batch, 3, args.size, args.size)
    else:
        model = DistributedDataParallel(mlp(features, args.width, classes))
        shape = (batch, features)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05 if not args.arch else 0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed + 1 + rank)
    losses = []
    for _ in range(args.steps):
        mark()
        x = torch.randn(*shape, generator=g)
        y = torch.randint(0, classes, (shape[0],), generator=g)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    dist.barrier()
    dist.destroy_process_group()
    report(args, f"{args.arch or 'mlp'}_ddp_rank{rank}", losses)


if __name__ == "__main__":
    main()
