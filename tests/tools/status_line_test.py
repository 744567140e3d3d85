#!/usr/bin/env python3
"""`sentinel run` on a terminal shows one live status line that is gone at exit; on a pipe it prints
nothing extra. The terminal is a pseudo-terminal (pty) of 24 rows and 100 columns.
Usage: status_line_test.py SENTINEL_BIN KNOWN_PATTERN_BIN"""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

sentinel, program = sys.argv[1], sys.argv[2]
# A run long enough for several redraws (4 per second): marked steps of a known allocation pattern.
cmd = [sentinel, "run", "--", program, "--mark", "--steps", "80", "--work-kb", "256"]
failures = 0


def check(what, ok):
    global failures
    print(("ok: " if ok else "FAILED: ") + what)
    failures += 0 if ok else 1


pid, fd = pty.fork()
if pid == 0:
    os.execv(sentinel, cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
text = out.decode("utf-8", "replace")
check("the run exits 0 on a terminal", os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
check("a status line was drawn on the last row", "\x1b[24;1H\x1b[2Ksentinel: track, " in text)
line = text[text.find("sentinel: track, "):].split("\x1b")[0]
check("it shows steps, DRAM and migrations: " + repr(line), " | step " in line and "DRAM " in line and "migrations" in line)
check("a later line counts steps", any(f"| step {n} " in text for n in range(5, 80)))
check("the line fits the terminal", all(len(l.split("\x1b")[0]) < 100 for l in text.split("\x1b[2K")[1:]))
# At exit: the row cleared and the scroll region given back, before the summary.
end = text.rfind("\x1b[r")
check("the line is erased at exit", end > 0 and text.rfind("\x1b[2K", 0, end) > text.rfind("sentinel: track, "))
check("the summary follows", "Sentinel summary" in text[end:])

piped = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
check("the run exits 0 on a pipe", piped.returncode == 0)
check("nothing extra on a pipe", b"\x1b" not in piped.stderr and b"sentinel: track" not in piped.stderr)
print(f"{failures} failed")
sys.exit(1 if failures else 0)
