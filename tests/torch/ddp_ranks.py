#!/usr/bin/python3
"""Data-parallel ranks under Sentinel (docs/distributed.md). Launches the ranks of tests/torch/programs/
ddp_mlp.py by hand (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK: torchrun of Debian's torch 1.13
fails on Python 3.11) and checks:
  - every rank's losses are bit-identical with and without Sentinel;
  - with one plain SENTINEL_STATS path, every rank writes its own file (<path>.r<rank>);
  - with --budget-check, on a faked two-node topology: the ranks of a host join one ledger, and a bytes
    budget that each rank alone would fill is shared (some objects are forced slow, the host's fast
    bytes stay within it), while (--control) with SENTINEL_JOB=none each rank takes the whole budget;
  - with --hosts 2, the ranks run in two UTS + mount namespaces (own host name, own /dev/shm), as on two
    machines: each host's ranks share that host's ledger, nothing else is shared.
Usage: ddp_ranks.py LIBSENTINEL [--ranks N] [--hosts H] [--budget-check [--control]] [--managed [--dry-run]]
                     [--steps S] [--program-args ARGS]
"""
import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from fake_sysfs import fake_two_node_sysfs  # noqa: E402
JOBS = set()  # job keys used: their ledgers and shared profiles in /dev/shm are removed at the end


def job_file(kind, job, host):
    """The name Sentinel gives a job's file on a host (src/core/output_path.cc, job_file_path)."""
    h = 14695981039346656037
    for b in (job + "\n" + host).encode():
        h = ((h ^ b) * 1099511628211) & (2**64 - 1)
    return f"/dev/shm/sentinel-{kind}-{h:016x}"
PROGRAM = os.path.join(HERE, "programs", "ddp_mlp.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(args, tmp, name, env_extra):
    """Runs every rank; returns {rank: losses}. Ranks of host h run in one namespace when --hosts > 1."""
    port = free_port()
    JOBS.add(f"127.0.0.1:{port}")
    per_host = args.ranks // args.hosts
    hosts = []
    for h in range(args.hosts):
        lines = []
        for local in range(per_host):
            rank = h * per_host + local
            env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(args.ranks),
                   "RANK": str(rank), "LOCAL_RANK": str(local), "GLOO_SOCKET_IFNAME": "lo",
                   "OMP_NUM_THREADS": "1"}
            env.update(env_extra)
            out = os.path.join(tmp, f"{name}.losses.{rank}")
            cmd = ["env"] + [f"{k}={v}" for k, v in env.items()] + \
                  ["/usr/bin/python3", PROGRAM, "--quiet", "--steps", str(args.steps), "--out", out] + \
                  shlex.split(args.program_args)
            lines.append(" ".join(shlex.quote(c) for c in cmd) + f" 2>{shlex.quote(out)}.err &\npids=\"$pids $!\"")
        script = "\n".join(lines) + "\nfail=0\nfor j in $pids; do wait $j || fail=1; done\nexit $fail\n"
        if args.hosts > 1:
            # A host of its own: host name and /dev/shm (where ledgers and output claims live).
            script = f"mount -t tmpfs tmpfs /dev/shm && hostname node{h} || exit 99\n" + script
            cmd = ["unshare", "--uts", "--mount", "sh", "-c", script]
        else:
            cmd = ["sh", "-c", script]
        hosts.append(subprocess.Popen(cmd))
    codes = [p.wait() for p in hosts]
    if 99 in codes:
        print("SKIP: cannot make a namespace with its own host name and /dev/shm here (needs root)")
        sys.exit(77)
    losses = {}
    for rank in range(args.ranks):
        out = os.path.join(tmp, f"{name}.losses.{rank}")
        err = open(out + ".err").read()
        if any(codes) or not os.path.exists(out):
            sys.exit(f"FAIL: {name}: exit codes {codes}; rank {rank} stderr:\n{err[-2000:]}")
        losses[rank] = json.load(open(out))["losses"]
        # Expected: the note that a plain output path got the rank's suffix.
        unexpected = [l for l in err.splitlines() if l.strip() and "ranks, writing" not in l]
        if unexpected:
            sys.exit(f"FAIL: {name}: unexpected stderr from rank {rank}: {unexpected[:5]}")
    return losses


def read_stats(tmp, name, ranks):
    stats = {}
    for rank in range(ranks):
        path = os.path.join(tmp, f"{name}.stats.json.r{rank}")
        if not os.path.exists(path):
            sys.exit(f"FAIL: {name}: rank {rank} wrote no {path}; files: {sorted(os.listdir(tmp))}")
        stats[rank] = json.load(open(path))
    if os.path.exists(os.path.join(tmp, f"{name}.stats.json")):
        sys.exit(f"FAIL: {name}: a rank wrote the plain stats path")
    return stats


def check_profile_once(args, tmp, base, plain):
    """Managed mode: each host's LOCAL_RANK 0 profiles; the host's other ranks do not, they take its profile."""
    # No software sampler: gloo's recv/send into protected tensor pages no longer fail (preload/io_calls.h),
    # but with it 1 run in 5 ended with no managed step on either rank (the profile came too late), so this
    # check stays independent of sampling. The profile then has lifetimes but no access counts.
    env = dict(base, SENTINEL_MODE="managed", SENTINEL_FAST_BUDGET="50%", SENTINEL_SAMPLER="none",
               SENTINEL_STATS=os.path.join(tmp, "managed.stats.json"))
    if args.dry_run:  # the slow node simulated (docs/managed-mode.md), moves booked at the preset's speed
        env.update(SENTINEL_DRY_RUN="1", SENTINEL_TIER="optane", SENTINEL_FAST_BUDGET="20%")
    else:
        env.setdefault("SENTINEL_SYSFS_ROOT", fake_two_node_sysfs(os.path.join(tmp, "sysfs")))
    losses = run_job(args, tmp, "managed", env)
    stats = read_stats(tmp, "managed", args.ranks)
    failures = []
    per_host = args.ranks // args.hosts
    for rank in range(args.ranks):
        s = stats[rank]
        leader = rank % per_host == 0
        print(f"managed rank {rank}: plans from LOCAL_RANK 0's profile {s['plans_from_local_rank0_profile']}, "
              f"profile in force from {s['profile_source']}, profiled steps {s['profiled_steps']}, "
              f"managed steps {s['managed_steps']}, plans {s.get('plans')}, first managed step "
              f"{s.get('first_managed_step')}, fallback steps {s.get('fallback_steps')}, steps detected "
              f"{s.get('steps_detected')}")
        if losses[rank] != plain[rank]:
            failures.append(f"managed rank {rank}: losses differ")
        if leader and (s["profiled_steps"] == 0 or s["plans_from_local_rank0_profile"] != 0):
            failures.append(f"managed rank {rank} (LOCAL_RANK 0) did not profile")
        # A follower plans from LOCAL_RANK 0's profile first; it may profile later (a re-detected step
        # structure drops the plan: docs/managed-mode.md), not before.
        if not leader and s["plans_from_local_rank0_profile"] == 0:
            failures.append(f"managed rank {rank} did not plan from LOCAL_RANK 0's profile")
        if s["managed_steps"] == 0:
            failures.append(f"managed rank {rank}: no managed step")
        # Once planned, every step follows the plan: the rank's autograd and communication threads allocate
        # in another order from step to step, which the plan allows (manage/compiled_plan.h, match_tag;
        # before, a third of the steps left it and ranks re-profiled).
        elif s["fallback_steps"] != 0 or s["reprofiles"] != 0 or \
                s["managed_steps"] != args.steps - s["first_managed_step"]:
            failures.append(f"managed rank {rank}: {s['fallback_steps']} fallback steps, {s['reprofiles']} "
                            f"re-profiles, {s['managed_steps']} managed steps from step {s['first_managed_step']}")
    return failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("lib")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--hosts", type=int, default=1)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--budget-check", action="store_true")
    p.add_argument("--managed", action="store_true",
                   help="also run managed mode: LOCAL_RANK 0 profiles, the others take its profile (give ~20 steps)")
    p.add_argument("--program-args", default="",
                   help="more arguments for programs/ddp_mlp.py, as one string (--arch resnet18: a torchvision model)")
    p.add_argument("--dry-run", action="store_true",
                   help="managed mode as a dry run at 20%% (optane) instead of on a faked two-node topology")
    p.add_argument("--budget", type=int, default=0,
                   help="with --budget-check: this host budget in bytes (default: one rank's fast peak, measured)")
    p.add_argument("--control", action="store_true",
                   help="with --budget-check, also run with SENTINEL_JOB=none: each rank then has the whole budget")
    args = p.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = run_job(args, tmp, "plain", {"LD_PRELOAD": ""})
        base = {"LD_PRELOAD": args.lib, "SENTINEL_LOG": "warn", "SENTINEL_STATS": os.path.join(tmp, "track.stats.json")}
        if args.budget_check:
            base["SENTINEL_SYSFS_ROOT"] = fake_two_node_sysfs(os.path.join(tmp, "sysfs"))
        if args.budget:  # straight to the shared budget: that run's stats are checked here too
            base["SENTINEL_FAST_BUDGET"] = str(args.budget)
        under = run_job(args, tmp, "track", base)
        stats = read_stats(tmp, "track", args.ranks)
        for rank in range(args.ranks):
            if plain[rank] != under[rank]:
                failures.append(f"rank {rank}: losses differ under Sentinel")
            s = stats[rank]
            if s["rank"] != rank:
                failures.append(f"rank {rank}: stats name rank {s['rank']}")
            if s["objects_tracked"] == 0 or s["invalid_frees"] != 0:
                failures.append(f"rank {rank}: objects {s['objects_tracked']}, invalid frees {s['invalid_frees']}")
        print(f"{args.ranks} ranks on {args.hosts} host(s): bit-identical losses, one stats file per rank")
        if args.budget_check:
            if args.budget:
                budget, shared_env, shared_losses, shared = args.budget, base, under, stats
            else:
                # Each rank alone fits in this budget; together they do not.
                budget = max(s["peak_fast_bytes"] for s in stats.values())
                shared_env = dict(base, SENTINEL_FAST_BUDGET=str(budget),
                                  SENTINEL_STATS=os.path.join(tmp, "shared.stats.json"))
                shared_losses = run_job(args, tmp, "shared", shared_env)
                shared = read_stats(tmp, "shared", args.ranks)
            alone = None
            if args.control:
                alone_env = dict(shared_env, SENTINEL_JOB="none", SENTINEL_STATS=os.path.join(tmp, "alone.stats.json"))
                run_job(args, tmp, "alone", alone_env)
                alone = read_stats(tmp, "alone", args.ranks)
            per_host = args.ranks // args.hosts
            for h in range(args.hosts):
                ranks = range(h * per_host, (h + 1) * per_host)
                ledgers = {shared[r]["host_ledger"] for r in ranks}
                if len(ledgers) != 1 or None in ledgers:
                    failures.append(f"host {h}: ranks name ledgers {ledgers}")
                peak = max(shared[r]["peak_host_fast_bytes"] for r in ranks)
                forced = sum(shared[r]["forced_slow_allocations"] for r in ranks)
                print(f"host {h}: budget {budget}; shared: host peak {peak}, forced slow {forced}")
                if peak > budget or peak == 0:
                    failures.append(f"host {h}: host fast peak {peak} vs budget {budget}")
                if per_host > 1 and forced == 0:
                    failures.append(f"host {h}: sharing the budget forced nothing slow")
                if alone is None:
                    continue
                alone_forced = sum(alone[r]["forced_slow_allocations"] for r in ranks)
                alone_fast = sum(alone[r]["peak_fast_bytes"] for r in ranks)
                print(f"host {h}: alone (SENTINEL_JOB=none): sum of rank peaks {alone_fast}, forced slow {alone_forced}")
                if per_host > 1 and alone_fast <= budget:
                    failures.append(f"host {h}: ranks alone did not exceed the budget together ({alone_fast})")
                if any(alone[r]["host_ledger"] is not None for r in ranks):
                    failures.append(f"host {h}: SENTINEL_JOB=none still joined a ledger")
            if args.hosts > 1 and len({shared[r]["host_ledger"] for r in range(args.ranks)}) != args.hosts:
                failures.append("hosts did not get a ledger each")
            for rank in range(args.ranks):
                if shared_losses[rank] != plain[rank]:
                    failures.append(f"rank {rank}: losses differ under a shared budget")
        if args.managed:
            failures += check_profile_once(args, tmp, base, plain)
    if args.hosts == 1:  # with several hosts each had a /dev/shm of its own, gone with its namespace
        for job in JOBS:
            for kind in ("ledger2", "profile"):
                path = job_file(kind, job, socket.gethostname())
                if os.path.exists(path):
                    os.unlink(path)
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("OK")


if __name__ == "__main__":
    main()
