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
import resource
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
    # Two workloads whose activations outweigh their parameters, as in the paper's ResNets and Transformers:
    # objects written in the forward pass, idle until the backward pass reads them, the ones a schedule can
    # send to the slow tier and bring back. A narrow CNN on large images (its parameters are a few KiB), and
    # a stack of Transformer blocks whose attention matrices (seq x seq per head) outweigh the weights. At
    # these sizes PyTorch's own long-lived buffers still hold about 3/4 of the peak (docs/results.md).
    "cnn-act": dict(model="cnn", batch=8, channels=4, image=64, optimizer="sgd"),
    "transformer-stack": dict(model="transformer", batch=4, width=32, depth=4, features=32, seq=64,
                              optimizer="sgd"),
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


def anon_pages_per_node():
    """This process's anonymous pages per node, from /proc/self/numa_maps: {node: pages of 4 KiB}."""
    nodes = {}
    try:
        with open("/proc/self/numa_maps") as f:
            for line in f:
                if " anon=" not in line:
                    continue
                fields = line.split()
                scale = 1
                for x in fields:
                    if x.startswith("kernelpagesize_kB="):
                        scale = int(x.split("=")[1]) // 4
                for x in fields:
                    if x[:1] == "N" and "=" in x:
                        node, count = x[1:].split("=")
                        nodes[int(node)] = nodes.get(int(node), 0) + int(count) * scale
    except OSError:
        pass
    return nodes


def node_meminfo_kb(node, key):
    with open(f"/sys/devices/system/node/node{node}/meminfo") as f:
        for line in f:
            parts = line.split()
            if parts[2] == key + ":":
                return int(parts[3])
    return 0


def node_high_watermark_pages(node):
    """Sum of the high watermarks of the node's zones (/proc/zoneinfo): reclaim stops above it."""
    total, here = 0, False
    with open("/proc/zoneinfo") as f:
        for line in f:
            parts = line.split()
            if line.startswith("Node "):
                here = parts[1].rstrip(",") == str(node)
            elif here and parts[:1] == ["high"]:
                total += int(parts[1])
    return total


# The node-0 filler of --node0-share: a child bound to node 0 that locks memory there (mlocked pages are
# never demoted or reclaimed), so that the rest of node 0 holds only the share of the program.
FILLER = r"""
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
held = []
def lock(n):
    if n <= 0:
        return
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    addr = ctypes.addressof((ctypes.c_char * n).from_buffer(m))
    if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(n)) != 0:
        sys.exit("filler: mlock failed: errno %d" % ctypes.get_errno())
    held.append(m)
lock(int(sys.argv[1]))
print("ready", flush=True)
for line in sys.stdin:  # "N": lock N bytes more (fill_node0's top-up)
    lock(int(line))
    print("ready", flush=True)
"""


def fill_node0(share):
    """Leaves node 0 room for `share` of this process's anonymous memory: a filler locks node 0's free
    memory, its page cache that no process maps, and the rest of the program's pages there, less the high
    watermark, and the kernel must demote that much of the program to node 1 to make room. (Without the
    page cache the kernel made room by dropping cache, and the program's pages all stayed on node 0:
    docs/results.md.) Mapped file pages (the program's code) are left out: the kernel may still take them
    instead of anonymous pages, which numa_maps at every step shows. Returns the filler and its sizes."""
    import subprocess
    if not os.path.exists("/sys/devices/system/node/node1/meminfo"):
        raise SystemExit("--node0-share needs a second node to demote to (the kmem guest)")
    pages = anon_pages_per_node()
    program = sum(pages.values()) * 4096
    free0 = node_meminfo_kb(0, "MemFree") * 1024
    unmapped_cache0 = max(0, node_meminfo_kb(0, "FilePages") - node_meminfo_kb(0, "Mapped")) * 1024
    high = node_high_watermark_pages(0) * 4096
    filler_bytes = max(0, int(free0 + unmapped_cache0 + (1 - share) * pages.get(0, 0) * 4096 - high)) // 4096 * 4096
    proc = subprocess.Popen(["numactl", "--membind=0", "/usr/bin/python3", "-c", FILLER, str(filler_bytes)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    if proc.stdout.readline().strip() != b"ready":
        raise SystemExit(f"node-0 filler of {filler_bytes} bytes failed (exit {proc.wait()})")
    info = {"share": share, "program_anon_bytes": program, "node0_free_bytes": free0,
            "node0_unmapped_cache_bytes": unmapped_cache0, "node0_high_watermark_bytes": high,
            "filler_bytes": filler_bytes}
    print(f"node 0 filled: {filler_bytes >> 20} MiB locked, program {program >> 20} MiB, share {share}", flush=True)
    return proc, info


def top_up_node0(proc, info):
    """The kernel makes room from what it finds cheapest, not only from the program's pages (the first
    fill left 62% of mlp's pages on node 0 at a share of 20%). After a step, while the program's node-0
    share is more than 5 points above the target, the filler locks that excess of the program's memory
    more. Returns the bytes added (0 when the share holds, or when the filler has gone: the OOM killer
    may take it when node 0 has nothing left to give, and the cell then says so in its record)."""
    pages = anon_pages_per_node()
    total = sum(pages.values())
    if total == 0 or proc.poll() is not None:
        return 0
    excess = pages.get(0, 0) / total - info["share"]
    if excess <= 0.05:
        return 0
    more = int(excess * total) * 4096
    proc.stdin.write(f"{more}\n".encode())
    proc.stdin.flush()
    if proc.stdout.readline().strip() != b"ready":
        info["filler_died"] = True
        return 0
    info["filler_bytes"] += more
    info["top_ups"] = info.get("top_ups", 0) + 1
    print(f"node 0 topped up: {more >> 20} MiB more (program's node-0 share was {excess + info['share']:.2f})",
          flush=True)
    return more


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
    p.add_argument("--node0-share", type=float,
                   help="after the first step, lock node 0's memory but for this share of the process's anonymous "
                        "memory (the kernel's placements linux-tiering-* and autonuma-* in the kmem guest)")
    p.add_argument("--numa-maps", action="store_true",
                   help="record the process's anonymous pages per node (numa_maps) after every step")
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
        faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
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
        # Minor faults of the step (every thread): pages faulted in, e.g. an extent whose pages were returned.
        record = {"step": step, "host_s": host_s, "loss": value.hex(),
                  "minor_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0,
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
        if args.numa_maps:
            record["anon_pages_per_node"] = {str(k): v for k, v in sorted(anon_pages_per_node().items())}
        steps.append(record)
        if args.node0_share is not None and step == 0:
            filler, fill_info = fill_node0(args.node0_share)
        elif args.node0_share is not None and fill_info.get("top_ups", 0) < 3:
            record["node0_top_up_bytes"] = top_up_node0(filler, fill_info)
        if window and step == window[2]:
            window[0].sentinel_callgrind_dump()
        print(f"{name} {args.placement} step {step}: host {host_s:.2f} s"
              + (f", virtual {record['virtual_ns'] / 1e6:.2f} ms, slow misses "
                 f"{record['slow_read_misses'] + record['slow_write_misses']}" if meter else ""),
              flush=True)
    result = {"workload": name, "placement": args.placement, "spec": spec, "steps": steps}
    if args.node0_share is not None:
        filler.stdin.close()
        filler.wait()
        result["node0_fill"] = fill_info
    with open(os.path.join(args.out_dir, f"{name}.{args.placement}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
