#!/usr/bin/python3
"""The soak with a real model: a small PyTorch MLP trained with SGD for many steps, run with
libsentinel.so preloaded (in managed mode in the two-node guest), sampling after every step what must
stay flat: resident bytes (/proc/self/statm), /proc/self/maps lines, the object heap's extents
(sentinel_get_footprint) and, every SAMPLE_EVERY steps, the system allocator's bytes in use (mallinfo2:
the whole process, Python, PyTorch and Sentinel) and the resident bytes of libsentinel.so's own
mappings (its static state: rings, tables). Prints the least-squares slope per step of each after
warm-up, like soak_program, plus the losses' checksum (so runs can be compared).

  LD_PRELOAD=build/lib/libsentinel.so SENTINEL_MODE=managed SENTINEL_MIN_OBJECT=8K \\
      OMP_NUM_THREADS=1 /usr/bin/python3 bench/soak/torch_soak.py --steps 1000
(bench/soak/run.sh --torch STEPS runs it; in the guest: scripts/numa-guest.sh bench/soak/run.sh --torch 1000)
"""
import argparse
import array
import ctypes
import hashlib
import os
import struct
import sys
import time


class Footprint(ctypes.Structure):
    _fields_ = [("extents", ctypes.c_uint64), ("extent_bytes", ctypes.c_uint64),
                ("cached_bytes", ctypes.c_uint64), ("cached_resident_bytes", ctypes.c_uint64)]


class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes():
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * PAGE


def mapping_runs():
    """Mappings of /proc/self/maps as runs of lines: a line that continues the one before it (same
    permissions and backing, starting at its end) is one mapping split by mbind (soak_program.cc)."""
    runs, prev = 0, None
    with open("/proc/self/maps", "rb") as f:
        for line in f:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split(b"-"))
            key = (fields[1], fields[3], fields[4], fields[5:])
            if prev is None or prev[0] != start or prev[1] != key:
                runs += 1
            prev = (end, key)
    return runs


def sentinel_static_resident_bytes():
    """Rss of the mappings of libsentinel.so (its data and bss: the runtime's fixed-size state)."""
    total, inside = 0, False
    with open("/proc/self/smaps", "rb") as f:
        for line in f:
            first = line.split(b" ", 1)[0]
            if b"-" in first and not first.endswith(b":"):
                inside = line.rstrip().endswith(b"libsentinel.so")
            elif inside and line.startswith(b"Rss:"):
                total += int(line.split()[1]) * 1024
    return total


def slope(ys):
    n = len(ys)
    if n < 2:
        return 0.0
    sx = n * (n - 1) / 2
    sxx = (n - 1) * n * (2 * n - 1) / 6
    sy = sum(ys)
    sxy = sum(i * y for i, y in enumerate(ys))
    return (n * sxy - sx * sy) / (n * sxx - sx * sx)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--warmup", type=int, help="steps before the fit (default: a quarter)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--proc-dir", help="copy /proc/self/{status,smaps,numa_maps} here at the end of warm-up, "
                   "half-way and at the end (bench/soak/smaps_diff.py compares them)")
    p.add_argument("--sample-every", type=int, default=25, help="steps between mallinfo2/smaps samples")
    args = p.parse_args()
    warmup = args.warmup if args.warmup is not None else args.steps // 4

    import torch  # after argparse: --help stays fast
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    libc = ctypes.CDLL(None)
    footprint_fn = getattr(libc, "sentinel_get_footprint", None)
    libc.mallinfo2.restype = Mallinfo2

    model = torch.nn.Sequential(torch.nn.Linear(args.features, args.width), torch.nn.ReLU(),
                                torch.nn.Linear(args.width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(99)
    # Preallocated, filled in place (no object per sample), so the sampling does not grow the process.
    # rss (statm), maps lines, extents, resident bytes of cached extents per step
    every = [array.array("q", bytes(8 * args.steps)) for _ in range(4)]
    sparse_n = (args.steps - warmup + args.sample_every - 1) // args.sample_every
    sparse = [array.array("q", bytes(8 * sparse_n)) for _ in range(2)]  # malloc bytes, sentinel static rss
    digest = hashlib.sha256()
    fp = Footprint()
    start = time.time()
    for step in range(args.steps):
        x = torch.randn(args.batch, args.features, generator=gen)
        y = torch.randint(0, 10, (args.batch,), generator=gen)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        digest.update(struct.pack("<f", loss.item()))
        if footprint_fn is not None:
            footprint_fn(ctypes.byref(fp))
        every[0][step] = resident_bytes()
        every[1][step] = mapping_runs()
        every[2][step] = fp.extents
        every[3][step] = fp.cached_resident_bytes
        if args.proc_dir and step in (warmup, (warmup + args.steps) // 2, args.steps - 1):
            for name in ("status", "smaps", "numa_maps"):
                with open(f"/proc/self/{name}", "rb") as src, open(f"{args.proc_dir}/{step}.{name}", "wb") as dst:
                    dst.write(src.read())
        if step % 100 == 0:
            print(f"step {step} {time.time() - start:.0f} s", file=sys.stderr, flush=True)
        if step >= warmup and (step - warmup) % args.sample_every == 0:
            m = libc.mallinfo2()
            sparse[0][(step - warmup) // args.sample_every] = m.uordblks + m.hblkhd
            sparse[1][(step - warmup) // args.sample_every] = sentinel_static_resident_bytes()
    for name, ys in (("resident_bytes", every[0]), ("mapping_runs", every[1]), ("heap_extents", every[2]),
                     ("cached_resident_bytes", every[3])):
        ys = ys[warmup:]
        print(f"slope {name} {slope(ys):.6f} first={ys[0]} last={ys[-1]}")
    for name, ys in (("malloc_bytes", sparse[0]), ("sentinel_static_resident_bytes", sparse[1])):
        print(f"slope {name} {slope(ys) / args.sample_every:.6f} first={ys[0]} last={ys[-1]}")
    print(f"steps {args.steps} warmup {warmup} sentinel {int(footprint_fn is not None)} "
          f"losses {digest.hexdigest()[:16]} seconds {time.time() - start:.0f}")


if __name__ == "__main__":
    main()
