#!/usr/bin/python3
"""Step-detection bench: runs each training program of tests/torch/programs (and scripts/train.py)
under libsentinel.so with SENTINEL_TRACE and SENTINEL_STATS, then prints, per program: the true number
of optimizer steps, the steps Sentinel detected, the period (events of the learned step), switches of
structure, the step during which the detector took the structure it kept (steps to lock), and the cost
of the detector per allocation event (the trace replayed by sentinel_step_replay: mean, and the
slowest call, which is the one that locks; best of 5 replays).

Usage: run_steps.py [--build-dir DIR] [--steps N=12] [--only NAME]...
Needs /usr/bin/python3 with torch (Debian's python3-torch). About 1-2 minutes.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(ROOT, "tests", "torch", "programs")

# name, script, arguments (--steps is added)[, extra environment]
SMALL_OBJECTS = {"SENTINEL_MIN_OBJECT": "16K", "OMP_NUM_THREADS": "1"}
CASES = [
    ("mlp", os.path.join(ROOT, "scripts", "train.py"),
     ["--model", "mlp", "--batch", "128", "--width", "512", "--depth", "6", "--features", "256"]),
    ("transformer", os.path.join(ROOT, "scripts", "train.py"),
     ["--model", "transformer", "--batch", "16", "--width", "128", "--depth", "2", "--features", "64", "--seq", "32"]),
    ("mlp eval2 odd-batch3", os.path.join(ROOT, "scripts", "train.py"),
     ["--model", "mlp", "--batch", "128", "--width", "512", "--depth", "6", "--features", "256",
      "--eval-every", "2", "--odd-batch-every", "3"]),
    ("gru_lm", os.path.join(PROGRAMS, "gru_lm.py"), []),
    ("gru_lm 2 threads", os.path.join(PROGRAMS, "gru_lm.py"), ["--threads", "2"]),
    ("lstm3_lm", os.path.join(PROGRAMS, "gru_lm.py"), ["--cell", "lstm", "--layers", "3", "--seq", "24"]),
    ("lstm varlen", os.path.join(PROGRAMS, "rnn_varlen.py"), []),
    ("lstm varlen packed", os.path.join(PROGRAMS, "rnn_varlen.py"), ["--packed"]),
    ("gru varlen packed", os.path.join(PROGRAMS, "rnn_varlen.py"), ["--cell", "gru", "--packed"]),
    ("mlp accum2 eval3", os.path.join(PROGRAMS, "mlp_accum_eval.py"), ["--accum", "2", "--eval-every", "3"]),
    ("mlp accum4 eval2 sgd", os.path.join(PROGRAMS, "mlp_accum_eval.py"),
     ["--accum", "4", "--eval-every", "2", "--optimizer", "sgd"]),
    ("cnn schedule ckpt", os.path.join(PROGRAMS, "cnn_schedule_ckpt.py"), ["--save-every", "4"]),
    # Variants the tests do not run.
    ("gru varlen 2 threads", os.path.join(PROGRAMS, "rnn_varlen.py"), ["--cell", "gru", "--threads", "2"]),
    ("lstm1 varlen b16", os.path.join(PROGRAMS, "rnn_varlen.py"), ["--layers", "1", "--batch", "16"]),
    ("mlp accum3 eval4x5", os.path.join(PROGRAMS, "mlp_accum_eval.py"),
     ["--accum", "3", "--eval-every", "4", "--eval-batches", "5"]),
    ("mlp accum1 eval1", os.path.join(PROGRAMS, "mlp_accum_eval.py"), ["--accum", "1", "--eval-every", "1"]),
    ("cnn ckpt every 2", os.path.join(PROGRAMS, "cnn_schedule_ckpt.py"), ["--save-every", "2", "--epoch-samples", "100"]),
    # 16 KiB objects: bench/results/guest_step.py's mlp, whose only objects are its three weight gradients
    # (one call-site, one size), and the GRU language model, whose backward time loop repeats exactly.
    ("mlp b8 16K", os.path.join(ROOT, "scripts", "train.py"),
     ["--model", "mlp", "--batch", "8", "--width", "384", "--depth", "3", "--features", "384", "--threads", "1"],
     SMALL_OBJECTS),
    ("gru_lm 16K", os.path.join(PROGRAMS, "gru_lm.py"), ["--threads", "1"], SMALL_OBJECTS),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.environ.get("SENTINEL_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--only", action="append", default=[])
    args = ap.parse_args()
    lib = os.path.join(args.build_dir, "lib", "libsentinel.so")
    replay = os.path.join(args.build_dir, "bench", "steps", "sentinel_step_replay")
    for path in (lib, replay):
        if not os.path.exists(path):
            sys.exit(f"missing {path}: build first (cmake --build {args.build_dir} --target sentinel sentinel_step_replay)")

    print(f"{'program':22} {'true':>5} {'found':>5} {'period':>6} {'switch':>6} {'locked in':>9} "
          f"{'ns/event':>8} {'max ns':>8}")
    for name, script, extra, *case_env in CASES:
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out, stats, trace = (os.path.join(tmp, f) for f in ("out.json", "stats.json", "trace.txt"))
            env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SENTINEL_")}
            env.update({"LD_PRELOAD": lib, "SENTINEL_STATS": stats, "SENTINEL_TRACE": trace, "SENTINEL_LOG": "warn"})
            env.update(case_env[0] if case_env else {})
            cmd = ["/usr/bin/python3", script, "--quiet", "--steps", str(args.steps), "--out", out] + extra
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{name:22} failed: {proc.stderr.strip()[-300:]}")
                continue
            true_steps = json.load(open(out))["steps"]
            s = json.load(open(stats))
            r = dict(kv.split("=") for kv in subprocess.run([replay, trace], capture_output=True, text=True,
                                                              check=True).stdout.split())
            note = "" if int(r["events"]) == s["allocation_events"] else " (trace holds the last events only)"
            print(f"{name:22} {true_steps:>5} {s['steps_detected']:>5} {s['step_period_events']:>6} "
                  f"{s['step_redetections']:>6} {'step ' + r['locked_in_step']:>9} "
                  f"{r['observe_mean_ns']:>8} {r['observe_max_ns']:>8}{note}", flush=True)


if __name__ == "__main__":
    main()
