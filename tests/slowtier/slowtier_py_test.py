#!/usr/bin/python3
"""tools/qemu-slowtier/slowtier.py on the host: the ctypes layout matches the C struct (400 bytes,
as client_test.cc checks) and, with no plugin to answer, SlowTier() raises OSError."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "qemu-slowtier"))
import ctypes  # noqa: E402
import slowtier  # noqa: E402

assert ctypes.sizeof(slowtier.Counters) == 400, ctypes.sizeof(slowtier.Counters)
try:
    slowtier.SlowTier(sys.argv[1])
except OSError as e:
    print("no plugin, as expected:", e)
else:
    raise SystemExit("SlowTier() answered outside the guest")
