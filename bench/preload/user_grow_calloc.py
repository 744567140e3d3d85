#!/usr/bin/python3
"""A program written as a user would, not for Sentinel: a bytearray grown by 64 KiB appends to 64 MiB (CPython
reallocs it), then ctypes calloc of 200 KiB..8 MiB blocks read back and written. Prints the buffer's SHA-256
prefix, the non-zero bytes calloc returned (must be 0) and the time. Run it plain and with LD_PRELOAD=libsentinel.so;
the first two figures must match (docs/benchmarks.md). Not a test: no limits."""
import hashlib, time, ctypes, sys
t=time.perf_counter()
b = bytearray()
chunk = bytes(range(256)) * 256  # 64 KiB
for i in range(1024):          # 64 MiB, grown by append (realloc in CPython)
    b += chunk
    b[-1] = i & 255
h1 = hashlib.sha256(b).hexdigest()
libc = ctypes.CDLL(None)
libc.calloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
nz = 0
for n in (1<<20, 3<<20, 8<<20, 200<<10):
    for _ in range(20):
        p = libc.calloc(1, n)
        buf = (ctypes.c_char * n).from_address(p)
        nz += n - buf.raw.count(0)
        ctypes.memset(p, 7, n)
        libc.free(p)
print(h1[:16], "nonzero bytes in calloc'd blocks:", nz, "time %.2fs" % (time.perf_counter()-t))
