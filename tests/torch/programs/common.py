"""What every program here shares: command-line options for the test harness (compare_losses.py), the
JSON it reads back, and the plain MLP several programs train. The training loops themselves are written
in each program the way a user writes them; nothing here knows about Sentinel except the optional
explicit step marker."""
import argparse
import ctypes
import json
import sys

import torch
import torch.nn as nn


def parser(doc):
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--steps", type=int, default=12, help="optimizer steps")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0: PyTorch's default)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--mark-steps", action="store_true",
                   help="call sentinel_step_begin (through ctypes) before every optimizer step")
    p.add_argument("--out", help="write the losses as JSON here")
    p.add_argument("--quiet", action="store_true")
    return p


def setup(args):
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)


def step_marker(args):
    """Returns a function to call at the start of every optimizer step: sentinel_step_begin from the
    preloaded libsentinel.so (found in the process's global symbols), or a no-op."""
    if not args.mark_steps:
        return lambda: None
    fn = getattr(ctypes.CDLL(None), "sentinel_step_begin", None)
    if fn is None:
        print("note: Sentinel is not loaded; --mark-steps has no effect", file=sys.stderr)
        return lambda: None
    fn.restype = None
    return fn


def mlp(features, width, classes, hidden=1):
    """features -> width, then `hidden` width x width layers, then -> classes, with ReLU between (layers
    are made in that order, so the initial weights depend only on the seed)."""
    layers = [nn.Linear(features, width), nn.ReLU()]
    for _ in range(hidden):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, classes))


def report(args, name, losses, step_seconds=None, step_kernel=None):
    """losses: one float per optimizer step, in order; step_seconds, when given, each step's wall time;
    step_kernel, when given, each step's (system CPU seconds, minor page faults) of the whole process."""
    hexed = [float(v).hex() for v in losses]
    if not args.quiet:
        for i, v in enumerate(losses):
            print(f"step {i} loss {v:.6f}")
    if args.out:
        with open(args.out, "w") as f:
            out = {"model": name, "steps": len(losses), "losses": hexed}
            if step_seconds is not None:
                out["step_seconds"] = step_seconds
            if step_kernel is not None:
                out["step_system_seconds"] = [k[0] for k in step_kernel]
                out["step_minor_faults"] = [k[1] for k in step_kernel]
            json.dump(out, f)
