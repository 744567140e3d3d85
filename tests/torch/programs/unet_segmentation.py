#!/usr/bin/python3
"""A U-Net for binary segmentation written the way users write one: a map-style Dataset that makes each
image and its mask from the index, a DataLoader with worker processes, BatchNorm, transposed convolutions and
skip connections (torch.cat), a loss of BCE-with-logits plus soft Dice, AdamW, ReduceLROnPlateau stepped on a
validation loss every few steps, and a checkpoint of the model and the optimizer written to memory
(torch.save into a BytesIO) every few steps, as a training script saves one to disk."""
import io

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from common import parser, report, setup, step_marker


class Blobs(Dataset):
    """Images with a few bright discs on noise; the mask marks the discs."""

    def __init__(self, count, size, seed):
        self.count, self.size, self.seed = count, size, seed

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed * 100003 + index)
        ys, xs = torch.meshgrid(torch.arange(self.size), torch.arange(self.size), indexing="ij")
        mask = torch.zeros(self.size, self.size)
        for _ in range(3):
            cy, cx = torch.randint(0, self.size, (2,), generator=g).tolist()
            r = int(torch.randint(self.size // 10, self.size // 4, (1,), generator=g))
            mask = torch.maximum(mask, (((ys - cy) ** 2 + (xs - cx) ** 2) <= r * r).float())
        image = mask.unsqueeze(0).repeat(3, 1, 1) * 0.6 + 0.4 * torch.rand(3, self.size, self.size, generator=g)
        return image, mask.unsqueeze(0)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, depth, width):
        super().__init__()
        chans = [width * 2 ** i for i in range(depth)]
        self.down = nn.ModuleList()
        cin = 3
        for c in chans:
            self.down.append(block(cin, c))
            cin = c
        self.bottom = block(chans[-1], chans[-1] * 2)
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        cin = chans[-1] * 2
        for c in reversed(chans):
            self.up.append(nn.ConvTranspose2d(cin, c, 2, stride=2))
            self.merge.append(block(2 * c, c))
            cin = c
        self.head = nn.Conv2d(chans[0], 1, 1)

    def forward(self, x):
        skips = []
        for down in self.down:
            x = down(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def dice_loss(logits, target, eps=1.0):
    p = torch.sigmoid(logits)
    inter = (p * target).sum(dim=(1, 2, 3))
    return 1 - ((2 * inter + eps) / (p.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3)) + eps)).mean()


def main():
    p = parser(__doc__)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--val-every", type=int, default=4)
    p.add_argument("--save-every", type=int, default=6)
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    train = DataLoader(Blobs(args.batch * args.steps, args.size, args.seed), batch_size=args.batch, shuffle=True,
                       num_workers=args.workers, drop_last=True, generator=torch.Generator().manual_seed(args.seed))
    val_images, val_masks = next(iter(DataLoader(Blobs(2 * args.batch, args.size, args.seed + 1),
                                                 batch_size=2 * args.batch)))
    model = UNet(args.depth, args.width)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1)
    losses, checkpoints = [], []
    for step, (images, masks) in enumerate(train):
        mark()
        model.train()
        optimizer.zero_grad()
        logits = model(images)
        loss = F.binary_cross_entropy_with_logits(logits, masks) + dice_loss(logits, masks)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if args.val_every and step % args.val_every == args.val_every - 1:
            model.eval()
            with torch.no_grad():
                val_logits = model(val_images)
                val = F.binary_cross_entropy_with_logits(val_logits, val_masks) + dice_loss(val_logits, val_masks)
            plateau.step(val.item())
            if not args.quiet:
                print(f"step {step} validation loss {val.item():.4f}")
        if args.save_every and step % args.save_every == args.save_every - 1:
            buf = io.BytesIO()
            torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, buf)
            checkpoints.append(buf.getbuffer().nbytes)
            # Read back as a resumed run would, and check it holds what was saved.
            buf.seek(0)
            state = torch.load(buf)
            assert all(torch.equal(state["model"][k], v) for k, v in model.state_dict().items())
    if not args.quiet:
        print(f"checkpoints: {len(checkpoints)} of {checkpoints[-1] if checkpoints else 0} bytes")
    report(args, "unet_segmentation", losses)


if __name__ == "__main__":
    main()
