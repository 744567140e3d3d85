#!/usr/bin/python3
"""Guest test (d): a tiny PyTorch training run under Sentinel with a fast budget gives the losses of
the same run without Sentinel, and its tensors live on both nodes, page for page where Sentinel says.

  place_torch.py --write-reference REF.json -- TRAIN_ARGS...   (on the host, without the preload)
  place_torch.py --check REF.json -- TRAIN_ARGS...             (in the guest, under LD_PRELOAD)

The guest's emulated CPU (QEMU TCG) lacks the host's AVX-512, so PyTorch and OpenBLAS would pick other
kernels and round differently. Both runs therefore pin the kernels to ones both CPUs have (generic
ATen kernels, one OpenBLAS core type, one thread) before torch is imported; then the losses of host
and guest runs compare bit for bit, and the guest needs only one `import torch` (~80 s under TCG).
"""
import argparse
import ctypes
import json
import os
import runpy
import sys

PINS = {"ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Nehalem", "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "ONEDNN_MAX_CPU_ISA": "SSE41",
        "DNNL_MAX_CPU_ISA": "SSE41"}
TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "train.py")
SYS_move_pages = 279  # x86_64
ENOENT, EFAULT = 2, 14  # a page not present: -ENOENT, or -EFAULT on the guest's 6.1 kernel


def train(args, out):
    """Runs scripts/train.py in this process (so the tensors stay inspectable) and returns its globals."""
    sys.argv = [TRAIN, "--quiet", "--threads", "1", "--out", out] + args
    return runpy.run_path(TRAIN, run_name="__main__")


def page_nodes(libc, addr, nbytes):
    first = addr & ~4095
    count = (addr + nbytes - first + 4095) // 4096
    pages = (ctypes.c_void_p * count)(*[first + i * 4096 for i in range(count)])
    status = (ctypes.c_int * count)()
    if libc.syscall(SYS_move_pages, 0, ctypes.c_ulong(count), pages, None, status, 0) != 0:
        sys.exit("FAIL: move_pages query failed")
    return list(status)


def check_tensors(tensors):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    node_of = getattr(libc, "sentinel_object_node", None)
    if node_of is None:
        sys.exit("FAIL: libsentinel.so is not loaded or does not export sentinel_object_node")
    node_of.restype = ctypes.c_int
    node_of.argtypes = [ctypes.c_void_p]
    per_node = {0: 0, 1: 0}
    for name, t in tensors:
        start = t.data_ptr() - t.storage_offset() * t.element_size()
        nbytes = t.storage().size() * t.element_size()
        node = node_of(ctypes.c_void_p(start))
        if node < 0:
            continue  # below the object threshold: the system allocator's
        if node not in per_node:
            sys.exit(f"FAIL: {name}: sentinel_object_node says {node}")
        status = page_nodes(libc, start, nbytes)
        wrong = [s for s in status if s not in (node, -ENOENT, -EFAULT)]
        if wrong:
            sys.exit(f"FAIL: {name} ({nbytes} bytes) placed on node {node}, pages on {sorted(set(wrong))}")
        if all(s in (-ENOENT, -EFAULT) for s in status):
            sys.exit(f"FAIL: {name}: no page present")
        per_node[node] += 1
    print(f"tensor objects per node: {per_node}")
    if per_node[0] == 0 or per_node[1] == 0:
        sys.exit("FAIL: expected tensor objects on both nodes under the budget")


def main():
    p = argparse.ArgumentParser()
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write-reference")
    g.add_argument("--check")
    p.add_argument("train_args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    args = [x for x in a.train_args if x != "--"]
    os.environ.update(PINS)
    if a.write_reference:
        if os.environ.get("LD_PRELOAD"):
            sys.exit("FAIL: the reference run must not run under a preload")
        train(args, a.write_reference)
        print(f"reference losses written to {a.write_reference}")
        return
    # Keep the optimizer alive past train.py's main() so its tensors can be inspected afterwards.
    import torch
    optimizers = []
    original_init = torch.optim.Optimizer.__init__

    def keep(self, *args, **kwargs):
        optimizers.append(self)
        original_init(self, *args, **kwargs)
    torch.optim.Optimizer.__init__ = keep
    out = "/tmp/place_torch_losses.json"
    train(args, out)
    with open(a.check) as f:
        ref = json.load(f)
    with open(out) as f:
        got = json.load(f)
    print(f"losses: reference {ref['losses']}\n        sentinel  {got['losses']}")
    if ref["losses"] != got["losses"]:
        sys.exit("FAIL: losses differ from the run without Sentinel")
    tensors = []
    for opt in optimizers:
        for group in opt.param_groups:
            for i, prm in enumerate(group["params"]):
                tensors.append((f"param{i}", prm.data))
                if prm.grad is not None:
                    tensors.append((f"grad{i}", prm.grad))
                for k, v in opt.state.get(prm, {}).items():
                    if torch.is_tensor(v):
                        tensors.append((f"state{i}.{k}", v))
    if not tensors:
        sys.exit("FAIL: no optimizer found after training")
    check_tensors(tensors)
    print("OK: same losses as without Sentinel; tensors on both nodes where Sentinel placed them")


if __name__ == "__main__":
    main()
