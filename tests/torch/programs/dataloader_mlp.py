#!/usr/bin/python3
"""An MLP fed by a torch DataLoader with worker processes (forked without exec, as on Linux by default):
the workers build the batches, the parent trains on them."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

from common import mlp, parser, report, setup, step_marker


class SyntheticSamples(Dataset):
    """Deterministic per index, whichever worker makes it; allocates objects (>= 64 KiB) in the worker."""

    def __init__(self, n, features, classes, seed):
        self.n, self.features, self.classes, self.seed = n, features, classes, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 100003 + i)
        scratch = torch.randn(64, self.features, generator=g)  # 64 KiB: an object in the worker
        return scratch.mean(dim=0), int(torch.randint(0, self.classes, (1,), generator=g))


def main():
    p = parser(__doc__)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    features, width, classes = 256, 512, 10
    model = mlp(features, width, classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    data = SyntheticSamples(args.steps * args.batch, features, classes, args.seed)
    loader = DataLoader(data, batch_size=args.batch, shuffle=False, num_workers=args.workers)
    losses = []
    for x, y in loader:
        mark()
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    report(args, "mlp_dataloader", losses)


if __name__ == "__main__":
    main()
