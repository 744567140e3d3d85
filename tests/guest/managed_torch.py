#!/usr/bin/python3
"""Guest test: PyTorch training in managed mode (SENTINEL_MODE=managed) on the two-node guest.

  managed_torch.py --write-reference REF.json -- TRAIN_ARGS...   (host, no preload: the reference losses)
  managed_torch.py --check REF.json [--deviating] [--min-fidelity F] -- TRAIN_ARGS... (guest: under Sentinel)

--check starts the training in a child process with libsentinel.so preloaded (SENTINEL_TEST_PRELOAD names it) and
watches it from outside: every 0.2 s it reads /proc/CHILD/numa_maps and adds up the node-0 pages of the
mappings whose policy names a node (prefer:N or bind:N): Sentinel binds every extent that way
(docs/placement.md); the rest of the process has the default policy, or "local" (a buffer of PyTorch's). At the end it
checks, against the child's SENTINEL_STATS and its own samples:
  - the losses are bit for bit the reference's (kernels pinned as in place_torch.py);
  - node-0 object bytes never exceeded the fast-memory budget;
  - managed mode ran: a plan was made, and every step after it is counted as managed or fallback;
  - without --deviating, no step fell back; with it (evaluation passes, odd batches), fallbacks are counted
    and steps are still managed;
  - the kernel's page placement (SENTINEL_PLACEMENT_CHECK, move_pages) matches the plan for >= 95% of the
    checked bytes;
  - no page of an object is still protected after profiling (the child looks at its own maps at the end);
  - with --min-fidelity, the plan fidelity (the share of the bytes the plan wants fast in a phase that uses
    them that were fast when the phase began, over the managed steps) is at least F.
"""
import argparse
import json
import os
import runpy
import signal
import subprocess
import sys
import time

PINS = {"ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Nehalem", "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "ONEDNN_MAX_CPU_ISA": "SSE41",
        "DNNL_MAX_CPU_ISA": "SSE41"}
TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "train.py")


def train(args, out):
    sys.argv = [TRAIN, "--quiet", "--threads", "1", "--out", out] + args
    runpy.run_path(TRAIN, run_name="__main__")


def sentinel_policy(word):
    return word.startswith("prefer:") or word.startswith("bind:")


def policy_vmas(pid):
    """(start, end, perms) of the mappings bound to a node (Sentinel's extents), from maps + numa_maps."""
    bound = set()
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 1 and sentinel_policy(parts[1]):
                bound.add(int(parts[0], 16))
    vmas = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            rng, perms = line.split()[:2]
            start, end = (int(x, 16) for x in rng.split("-"))
            if start in bound:
                vmas.append((start, end, perms))
    return vmas


def node0_policy_bytes(pid, by_policy=None):
    total = 0
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or not sentinel_policy(parts[1]):
                continue
            page = 4096
            n0 = 0
            for p in parts[2:]:
                if p.startswith("kernelpagesize_kB="):
                    page = int(p.split("=")[1]) * 1024
                elif p.startswith("N0="):
                    n0 = int(p.split("=")[1])
            total += n0 * page
            if by_policy is not None:
                by_policy[parts[1]] = by_policy.get(parts[1], 0) + n0 * page
    return total


def child(ref_out, args):
    import faulthandler
    faulthandler.enable()
    os.environ.update(PINS)
    train(args, ref_out)
    protected = [v for v in policy_vmas(os.getpid()) if v[2].startswith("---")]
    with open(ref_out) as f:
        data = json.load(f)
    data["protected_object_mappings"] = len(protected)
    with open(ref_out, "w") as f:
        json.dump(data, f)


def stopped_snapshot(pid, read):
    """read() while the process is stopped; None if it could not be stopped (it is exiting)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        for _ in range(2000):
            states = set()
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        states.add(f.read().rsplit(")", 1)[1].split()[0])
                except FileNotFoundError:
                    pass
            if states and states <= {"T", "t"}:  # every thread stopped: one instant
                return read()
            if states & {"Z", "X"}:
                return None
            time.sleep(0.001)
        return None
    finally:
        os.kill(pid, signal.SIGCONT)


def fail(msg):
    sys.exit("FAIL: " + msg)


def check(ref_path, deviating, min_fidelity, args):
    out = "/tmp/managed_torch_losses.json"
    stats_path = "/tmp/managed_torch_stats.json"
    env = dict(os.environ)
    env.update(PINS)
    env.update({"LD_PRELOAD": os.environ["SENTINEL_TEST_PRELOAD"], "SENTINEL_MODE": "managed",
                "SENTINEL_STATS": stats_path, "SENTINEL_PLACEMENT_CHECK": "1"})
    env.setdefault("SENTINEL_FAST_BUDGET", "20%")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", out, "--"] + args, env=env)
    peak_node0, samples, peak_split = 0, 0, {}
    while proc.poll() is None:
        try:
            split = {}
            now = stopped_snapshot(proc.pid, lambda: node0_policy_bytes(proc.pid, split))
            if now is not None:
                if now > peak_node0:
                    peak_node0, peak_split = now, split
                samples += 1
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
        time.sleep(0.2)
    if proc.returncode != 0:
        fail(f"training under Sentinel exited with {proc.returncode}")
    with open(ref_path) as f:
        ref = json.load(f)
    with open(out) as f:
        got = json.load(f)
    with open(stats_path) as f:
        st = json.load(f)
    print(f"losses: reference {ref['losses']}\n        sentinel  {got['losses']}")
    keys = ["steps_detected", "last_step_index", "first_managed_step", "managed_steps", "fallback_steps",
            "plan_deviations", "plan_fidelity", "late_prefetches", "replans", "plans", "fast_budget_bytes",
            "peak_fast_bytes", "planned_bytes_per_step", "bytes_migrated_per_step", "managed_moves_issued",
            "managed_moves_done", "managed_moves_failed", "planned_fast_forced_slow", "placement_checked_bytes",
            "placement_matching_bytes", "migration_bw_planned_gbps", "migrations_failed", "migration_pages_busy",
            "partial_moves_counted_fast", "bind_failures", "forced_slow_allocations"]
    print("stats: " + ", ".join(f"{k}={st.get(k)}" for k in keys))
    print(f"outside view: {samples} samples of /proc/{proc.pid}/numa_maps, node-0 object bytes at most {peak_node0} "
          f"(node-0 bytes by mapping policy then: {peak_split})")
    if ref["losses"] != got["losses"] or ref.get("eval_losses", []) != got.get("eval_losses", []):
        fail("losses differ from the run without Sentinel")
    if st["mode"] != "managed" or st.get("plans", 0) < 1 or st.get("first_managed_step", -1) < 0:
        fail("managed mode made no plan")
    budget = st.get("fast_budget_bytes")
    if budget is None or peak_node0 > budget:
        fail(f"node-0 object bytes {peak_node0} above the budget {budget}")
    if st["peak_fast_bytes"] > budget:
        fail(f"Sentinel's own count of fast bytes {st['peak_fast_bytes']} above the budget {budget}")
    after = st["last_step_index"] - st["first_managed_step"] + 1  # the last step is closed at exit
    if not deviating and (st["managed_steps"] + st["fallback_steps"] != after or after < 2):
        fail(f"{after} steps after planning, {st['managed_steps']} managed + {st['fallback_steps']} fallback")
    if deviating:
        if st["fallback_steps"] < 1 or st["plan_deviations"] < 1 or st["managed_steps"] < 1:
            fail("the deviating steps were not counted as fallbacks, or no step was managed")
    elif st["fallback_steps"] != 0:
        fail(f"{st['fallback_steps']} steps fell back in a run that never deviates")
    if st["placement_checked_bytes"] == 0:
        fail("no placement was checked")
    share = st["placement_matching_bytes"] / st["placement_checked_bytes"]
    if share < 0.95:
        fail(f"only {share:.3f} of the checked bytes are on the node the plan wants")
    if min_fidelity is not None and st["plan_fidelity"] < min_fidelity:
        fail(f"plan fidelity {st['plan_fidelity']:.3f} below {min_fidelity}")
    if got.get("protected_object_mappings", 0) != 0:
        fail(f"{got['protected_object_mappings']} object mappings still protected after profiling")
    print(f"OK: same losses; budget held (outside view); {st['managed_steps']} managed steps, "
          f"{st['fallback_steps']} fallback; placement {share:.3f} as planned; fidelity {st['plan_fidelity']:.3f}")


def main():
    p = argparse.ArgumentParser()
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write-reference")
    g.add_argument("--check")
    g.add_argument("--child")
    p.add_argument("--deviating", action="store_true")
    p.add_argument("--min-fidelity", type=float)
    p.add_argument("train_args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    args = [x for x in a.train_args if x != "--"]
    if a.child:
        return child(a.child, args)
    if a.write_reference:
        if os.environ.get("LD_PRELOAD"):
            fail("the reference run must not run under a preload")
        os.environ.update(PINS)
        train(args, a.write_reference)
        print(f"reference losses written to {a.write_reference}")
        return
    check(a.check, a.deviating, a.min_fidelity, args)


if __name__ == "__main__":
    main()
