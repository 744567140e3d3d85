#!/usr/bin/python3
"""A torchvision classification model trained from scratch the way its reference recipes do it: SGD with
momentum and weight decay, a StepLR schedule, cross entropy with label smoothing; random batches (seeded),
or torchvision.datasets.FakeData with transforms through a DataLoader with worker processes."""
import resource
import time

import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader

from common import parser, report, setup, step_marker


def batches(args):
    """Random images and labels, one new batch per step, from a seeded generator."""
    g = torch.Generator().manual_seed(args.seed)
    for _ in range(args.steps):
        x = torch.randn(args.batch, 3, args.size, args.size, generator=g)
        y = torch.randint(0, args.classes, (args.batch,), generator=g)
        yield x, y


def fake_data(args):
    """FakeData with the usual transforms, fed by a DataLoader with worker processes."""
    import torchvision.transforms as T
    transform = T.Compose([T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    data = torchvision.datasets.FakeData(size=args.steps * args.batch, image_size=(3, args.size, args.size),
                                         num_classes=args.classes, transform=transform, random_offset=args.seed)
    g = torch.Generator().manual_seed(args.seed)  # the flips, in the workers, seeded from it
    return DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=args.workers, generator=g,
                      drop_last=True)


def main():
    p = parser(__doc__)
    p.add_argument("--arch", default="resnet18", help="torchvision.models name")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=64, help="image side in pixels")
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--fake-data", action="store_true", help="FakeData + transforms through a DataLoader")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--step-times", action="store_true", help="also write each step's wall time (s) to --out")
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    # Vision transformers are built for one image size; the others take any.
    sized = {"image_size": args.size} if args.arch.startswith("vit_") else {}
    model = getattr(torchvision.models, args.arch)(num_classes=args.classes, **sized)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(1, args.steps // 3), gamma=0.1)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses, times, kernel = [], [], []
    t, u = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    for x, y in (fake_data(args) if args.fake_data else batches(args)):
        mark()
        optimizer.zero_grad()
        out = model(x)
        if isinstance(out, tuple):  # GoogLeNet and Inception v3 train with auxiliary classifiers
            loss = criterion(out[0], y) + 0.3 * sum(criterion(a, y) for a in out[1:] if a is not None)
        else:
            loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        now, used = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        times.append(now - t)
        kernel.append((used.ru_stime - u.ru_stime, used.ru_minflt - u.ru_minflt))
        t, u = now, used
    report(args, args.arch, losses, times if args.step_times else None, kernel if args.step_times else None)


if __name__ == "__main__":
    main()
