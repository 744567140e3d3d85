#!/usr/bin/python3
"""An MLP trained with gradient accumulation (several micro-batches per optimizer step, loss scaled by
their number) and a validation pass under torch.no_grad() every few steps."""
import torch
import torch.nn as nn

from common import mlp, parser, report, setup, step_marker


def main():
    p = parser(__doc__)
    p.add_argument("--accum", type=int, default=2, help="micro-batches per optimizer step")
    p.add_argument("--eval-every", type=int, default=3, help="validate after every K-th step (0: never)")
    p.add_argument("--eval-batches", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd"])
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)

    features, width, classes = 256, 512, 10
    model = mlp(features, width, classes, hidden=2)
    if args.optimizer == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed + 1)
    val = [(torch.randn(args.batch * 2, features, generator=g), torch.randint(0, classes, (args.batch * 2,), generator=g))
           for _ in range(args.eval_batches)]

    losses = []
    for step in range(args.steps):
        mark()
        model.train()
        total = 0.0
        for _ in range(args.accum):
            x = torch.randn(args.batch, features, generator=g)
            y = torch.randint(0, classes, (args.batch,), generator=g)
            loss = criterion(model(x), y) / args.accum
            loss.backward()
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(total)
        if args.eval_every and (step + 1) % args.eval_every == 0:
            model.eval()
            correct = 0
            with torch.no_grad():
                for vx, vy in val:
                    correct += (model(vx).argmax(dim=1) == vy).sum().item()
            if not args.quiet:
                print(f"step {step}: validation accuracy {correct / sum(len(vy) for _, vy in val):.3f}")
    report(args, f"mlp_accum{args.accum}_eval{args.eval_every}", losses)


if __name__ == "__main__":
    main()
