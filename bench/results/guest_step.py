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
        # (read as numa_maps is, below: an 8 KiB file buffer each step would be an object of the process)
        for line in numa_maps_lines("/proc/vmstat"):
            key, _, value = line.decode().partition(" ")
            if key in counts:
                counts[key] = int(value)
    except OSError:
        pass
    return counts


def numa_maps_lines(path="/proc/self/numa_maps"):
    """The lines of a numa_maps file, read 4,000 bytes at a time: a file object's 8 KiB buffer (or a whole read)
    would be an object allocation of the process under Sentinel's 8 KiB minimum in the managed cells and
    would change their step (gru-lm's detected period went from 30 to 79 events, and its steps left the plan)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        rest = b""
        while True:
            chunk = os.read(fd, 4000)
            if not chunk:
                break
            *lines, rest = (rest + chunk).split(b"\n")
            yield from lines
        if rest:
            yield rest
    finally:
        os.close(fd)


def anon_pages_per_node():
    """This process's anonymous pages per node, from /proc/self/numa_maps: {node: pages of 4 KiB}."""
    nodes = {}
    try:
        for line in numa_maps_lines():
            if b" anon=" not in line:
                continue
            fields = line.split()
            scale = 1
            for x in fields:
                if x.startswith(b"kernelpagesize_kB="):
                    scale = int(x.split(b"=")[1]) // 4
            for x in fields:
                if x[:1] == b"N" and b"=" in x:
                    node, count = x[1:].split(b"=")
                    nodes[int(node)] = nodes.get(int(node), 0) + int(count) * scale
    except OSError:
        pass
    return nodes


class NodeZeroShare:
    """--node0-share P: holds this process's anonymous pages on node 0 at P of its anonymous memory with the
    kernel's own proactive reclaim, the way a memory agent (Senpai, TMO) holds a target; --node1-bytes N
    holds node 0 at all but N bytes of them instead (N on the slow tier). The process runs in a memory
    cgroup of its own from its start, and after every step, while node 0 holds more than the target (by
    more than 2% of the process's pages), the excess is written to the cgroup's memory.reclaim. With
    demotion on, reclaim in a cgroup demotes anonymous pages from node 0 to the lower tier (Linux 5.19 on;
    the 6.1 guest has no swap, so demotion is all reclaim can do with them) and the kernel picks which:
    the coldest of its LRU lists. NUMA balancing may promote pages back during the next step; the record
    of each step has the share at its end (before the reclaim) and after the reclaim.
    An earlier way, a filler process that mlocked node 0's free memory, left 36% of mlp on node 0 at a
    target of 20%: the kernel made room from page cache and other processes' pages first."""

    ROOT = "/sys/fs/cgroup"

    def __init__(self, share=None, slow_bytes=None):
        if not os.path.exists("/sys/devices/system/node/node1/meminfo"):
            raise SystemExit("--node0-share and --node1-bytes need a second node to demote to (the kmem guest)")
        self.share = share
        self.slow_bytes = slow_bytes
        if not os.path.exists(os.path.join(self.ROOT, "cgroup.controllers")):
            os.makedirs(self.ROOT, exist_ok=True)
            if os.system(f"mount -t cgroup2 none {self.ROOT}") != 0:
                raise SystemExit(f"--node0-share: cannot mount cgroup2 on {self.ROOT}")
        with open(os.path.join(self.ROOT, "cgroup.subtree_control"), "w") as f:
            f.write("+memory")
        self.group = os.path.join(self.ROOT, f"guest-step-{os.getpid()}")
        os.makedirs(self.group, exist_ok=True)
        with open(os.path.join(self.group, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        if not os.path.exists(os.path.join(self.group, "memory.reclaim")):
            raise SystemExit("--node0-share: the kernel has no memory.reclaim (Linux 5.19 or later)")

    def hold(self, record, rounds=24):
        """After a step: demotes the excess over the target; adds what it did to the step's record. Reclaim
        may take the process's page cache first (the libraries it runs from, charged to its cgroup), so it is
        asked again, up to `rounds` times, while the anonymous pages on node 0 are still above the target.
        Each round asks for half the excess (at least 1 MiB): asked for all of it at once, reclaim overshot
        by about 20 MiB (whole huge pages, batches of LRU pages) and left 4-5% of the process on node 0 at a
        target of 20% (mlp, cnn, lstm, transformer-stack under autonuma-20, 2026-12-06)."""
        asked = 0
        demoted0 = vmstat_pages()
        for _ in range(rounds):
            pages = anon_pages_per_node()
            total = sum(pages.values())
            target = total - self.slow_bytes // 4096 if self.slow_bytes is not None else int(self.share * total)
            excess = pages.get(0, 0) - target
            if not total or excess <= 0.02 * total:
                break
            ask = max(excess // 2, 256) * 4096
            asked += ask
            try:
                with open(os.path.join(self.group, "memory.reclaim"), "w") as f:
                    f.write(str(ask))
            except OSError:  # EAGAIN: it reclaimed less than asked; numa_maps says how much
                pass
        demoted = vmstat_pages()
        after = anon_pages_per_node()
        record["node0_reclaim_asked_bytes"] = asked
        record["node0_reclaim_demoted_pages"] = (demoted["pgdemote_direct"] + demoted["pgdemote_kswapd"]
                                                 - demoted0["pgdemote_direct"] - demoted0["pgdemote_kswapd"])
        record["anon_pages_per_node_after_reclaim"] = {str(k): v for k, v in sorted(after.items())}


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
                   help="after every step, demote (memory.reclaim of the process's own cgroup) what node 0 holds of "
                        "the process's anonymous memory above this share (the kernel's placements linux-tiering-* "
                        "and autonuma-* in the kmem guest)")
    p.add_argument("--node1-bytes", type=int,
                   help="the same, holding node 0 at all but this many bytes of the process's anonymous memory (the "
                        "kernel's placements with the slow-tier bytes of Sentinel's managed cell: linux-tiering-m*, "
                        "autonuma-m*)")
    p.add_argument("--numa-maps", action="store_true",
                   help="record the process's anonymous pages per node (numa_maps) after every step")
    args = p.parse_args()
    names = args.workloads.split(",")
    for name in names:
        if name not in WORKLOADS:
            p.error(f"unknown workload {name}")

    # Before torch is imported: the cgroup is charged only for what the process allocates once in it.
    holder = None
    if args.node0_share is not None or args.node1_bytes is not None:
        holder = NodeZeroShare(args.node0_share, args.node1_bytes)
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
        run_workload(name, args, meter, holder)


def run_workload(name, args, meter, holder):

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
        if holder is not None:
            holder.hold(record)
        if window and step == window[2]:
            window[0].sentinel_callgrind_dump()
        print(f"{name} {args.placement} step {step}: host {host_s:.2f} s"
              + (f", virtual {record['virtual_ns'] / 1e6:.2f} ms, slow misses "
                 f"{record['slow_read_misses'] + record['slow_write_misses']}" if meter else ""),
              flush=True)
    result = {"workload": name, "placement": args.placement, "spec": spec, "steps": steps}
    if holder is not None:
        result["node0_share_target"] = holder.share
        result["node1_bytes_target"] = holder.slow_bytes
    with open(os.path.join(args.out_dir, f"{name}.{args.placement}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
