#!/usr/bin/python3
"""A data-parallel torchvision model (torch.distributed, gloo backend, env:// rendezvous), written as users
write one: DistributedDataParallel around torchvision.models.ARCH, SGD with momentum, random images per
rank. Launched like ddp_mlp.py (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK set by hand)."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torch.nn.parallel import DistributedDataParallel

from common import parser, report, setup, step_marker


def main():
    p = parser(__doc__)
    p.add_argument("--arch", default="resnet18")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--size", type=int, default=64, help="image height and width")
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    classes = 10
    model = DistributedDataParallel(getattr(torchvision.models, args.arch)(num_classes=classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed + 1 + rank)
    losses = []
    for _ in range(args.steps):
        mark()
        x = torch.randn(args.batch, 3, args.size, args.size, generator=g)
        y = torch.randint(0, classes, (args.batch,), generator=g)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    dist.barrier()
    dist.destroy_process_group()
    report(args, f"{args.arch}_ddp_rank{rank}", losses)


if __name__ == "__main__":
    main()
