#!/usr/bin/python3
"""PyTorch training workloads, with the slow-tier counters read at every step boundary.

Runs in the two-node guest with SENTINEL_GUEST_SLOW_TIER on (bench/results/run.sh starts it under
each placement); on the host (--host) it only measures the step time, for the CPI calibration.
Several workloads run one after the other in one process (import torch takes minutes in the guest);
each writes OUT_DIR/<workload>.<placement>.json: per step the virtual time, instructions, misses per
node, pages the kernel migrated, demoted and promoted (/proc/vmstat), host seconds and the loss.
"""
import argparse
import json
import os
import sys
import time
from types import SimpleNamespace

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tools", "qemu-slowtier"))

# Small enough that a guest step takes seconds under TCG (compute runs ~3000x slower there), large
# enough that parameters and optimizer state exceed the plugin's 2 MiB cache model.
WORKLOADS = {
    "mlp": dict(model="mlp", batch=8, width=384, depth=3, features=384, optimizer="sgd"),
    "mlp-adam": dict(model="mlp", batch=8, width=384, depth=3, features=384, optimizer="adam"),
    "cnn": dict(model="cnn", batch=4, channels=8, image=16, optimizer="sgd"),
    "lstm": dict(model="lstm", batch=4, width=96, features=32, seq=8, optimizer="sgd"),
    "transformer": dict(model="transformer", batch=4, width=64, depth=2, features=64, seq=8,
                        optimizer="sgd"),
    # A GRU language model (scripts/workloads.py GruLM): token ids instead of dense inputs, an embedding
    # table whose dense gradient and momentum cover every row each step while the forward pass reads
    # only the batch's rows, and a vocabulary head; loss at every position.
    "gru-lm": dict(model="gru", batch=4, width=64, vocab=2000, seq=4, optimizer="sgd"),
}
DEFAULTS = dict(batch=16, width=256, depth=2, features=64, classes=10, channels=8, image=16, seq=16)


# The kernel's page movement (/proc/vmstat): every migration (pgmigrate_success, which counts
# demotions and promotions too), reclaim's demotions to a lower memory tier (pgdemote_kswapd,
# pgdemote_direct) and NUMA balancing's promotions in tiering mode (pgpromote_success). Counters a
# kernel lacks read 0.
VMSTAT_KEYS = ("pgmigrate_success", "pgdemote_kswapd", "pgdemote_direct", "pgpromote_success")


def vmstat_pages():
    counts = dict.fromkeys(VMSTAT_KEYS, 0)
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key in counts:
                    counts[key] = int(value)
    except OSError:
        pass
    return counts


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", required=True, help="comma separated: " + ",".join(sorted(WORKLOADS)))
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--placement", default="unnamed")
    p.add_argument("--host", action="store_true", help="no slow-tier counters (host calibration run)")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--mark-steps", action="store_true",
                   help="mark each step's start for Sentinel (sentinel_step_begin): two runs of a workload then have "
                        "the same step clock, so their profiles can be compared phase by phase (bench/profile/truth.sh)")
    p.add_argument("--callgrind-window", metavar="LIB:FIRST:LAST",
                   help="under valgrind --tool=callgrind --instr-atstart=no: count instructions from step FIRST "
                        "to step LAST (inclusive) of each workload, with LIB = libsentinel_callgrind_window.so "
                        "(bench/manage/event_cost.py)")
    args = p.parse_args()
    names = args.workloads.split(",")
    for name in names:
        if name not in WORKLOADS:
            p.error(f"unknown workload {name}")

    meter = None
    if not args.host:
        from slowtier import SlowTier
        meter = SlowTier()
        # The training thread runs on the last CPU and its step is timed on that vCPU's own clock:
        # scripts/numa-guest.sh boots with nohz_full on it when the slow tier is on, so the tick that
        # arrives at the host's rate does not swamp the step, and the machine's clock (the latest
        # vCPU's) would also run with Sentinel's service and migration threads on the other vCPU,
        # which work in the background. Threads started before this point keep every CPU.
        args.cpu = max(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {args.cpu})
    for name in names:
        run_workload(name, args, meter)


def run_workload(name, args, meter):

    import torch
    import torch.nn as nn
    import train

    torch.set_num_threads(1)
    torch.manual_seed(1234)
    spec = dict(DEFAULTS, **WORKLOADS[name])
    tokens = spec["model"] == "gru"
    if tokens:
        import workloads
        model = workloads.GruLM(spec["vocab"], spec["width"], spec["width"])
    else:
        model, shape = train.build(SimpleNamespace(**spec))
    if spec["optimizer"] == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1235)

    step_begin = None
    if args.mark_steps:
        import ctypes
        step_begin = getattr(ctypes.CDLL(None), "sentinel_step_begin", None)
    window = None
    if args.callgrind_window:
        import ctypes
        lib, first, last = args.callgrind_window.rsplit(":", 2)
        window = (ctypes.CDLL(lib), int(first), int(last))
    steps = []
    for step in range(args.steps):
        if window and step == window[1]:
            window[0].sentinel_callgrind_start()
        if step_begin is not None:
            step_begin()
        before = meter.read() if meter else None
        moved0 = vmstat_pages()
        t0 = time.perf_counter()
        if tokens:
            t = torch.randint(0, spec["vocab"], (spec["batch"], spec["seq"] + 1), generator=gen)
            x, y = t[:, :-1], t[:, 1:].reshape(-1)
        else:
            x = torch.randn(shape, generator=gen)
            y = torch.randint(0, spec["classes"], (spec["batch"],), generator=gen)
        opt.zero_grad()
        out = model(x)
        loss = loss_fn(out.reshape(-1, out.shape[-1]) if tokens else out, y)
        loss.backward()
        opt.step()
        value = loss.item()
        host_s = time.perf_counter() - t0
        moved = vmstat_pages()
        record = {"step": step, "host_s": host_s, "loss": value.hex(),
                  "pages_migrated": moved["pgmigrate_success"] - moved0["pgmigrate_success"],
                  "pages_demoted": moved["pgdemote_kswapd"] + moved["pgdemote_direct"]
                  - moved0["pgdemote_kswapd"] - moved0["pgdemote_direct"],
                  "pages_promoted": moved["pgpromote_success"] - moved0["pgpromote_success"]}
        if meter:
            after = meter.read()
            record.update(meter.delta(before, after))
            record["machine_virtual_ns"] = record["virtual_ns"]
            if before["vcpu"] == after["vcpu"] == args.cpu:
                record["virtual_ns"] = after["vcpu_virtual_ns"][args.cpu] - before["vcpu_virtual_ns"][args.cpu]
            else:  # not on the pinned CPU after all: the machine's clock, said so
                record["virtual_clock"] = "machine"
        steps.append(record)
        if window and step == window[2]:
            window[0].sentinel_callgrind_dump()
        print(f"{name} {args.placement} step {step}: host {host_s:.2f} s"
              + (f", virtual {record['virtual_ns'] / 1e6:.2f} ms, slow misses "
                 f"{record['slow_read_misses'] + record['slow_write_misses']}" if meter else ""),
              flush=True)
    with open(os.path.join(args.out_dir, f"{name}.{args.placement}.json"), "w") as f:
        json.dump({"workload": name, "placement": args.placement, "spec": spec,
                   "steps": steps}, f)


if __name__ == "__main__":
    main()
