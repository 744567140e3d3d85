#!/usr/bin/python3
"""A data-parallel MLP (torch.distributed, gloo backend, env:// rendezvous): one process per rank, launched
with MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK set (what torchrun sets; Debian's torch
1.13 torchrun fails on Python 3.11). Each rank trains on its own shard; gradients are averaged by DDP."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from common import mlp, parser, report, setup, step_marker


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=512)
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    features, classes = 256, 10
    model = DistributedDataParallel(mlp(features, args.width, classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed + 1 + rank)
    losses = []
    for _ in range(args.steps):
        mark()
        x = torch.randn(args.batch, features, generator=g)
        y = torch.randint(0, classes, (args.batch,), generator=g)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    dist.barrier()
    dist.destroy_process_group()
    report(args, f"mlp_ddp_rank{rank}", losses)


if __name__ == "__main__":
    main()
