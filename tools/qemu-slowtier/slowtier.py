"""Read the slow-tier emulator's counters and virtual clock from a program in the two-node guest.

    from slowtier import SlowTier
    st = SlowTier()              # raises OSError when no slow-tier plugin answers
    before = st.read()
    train_step()
    step = SlowTier.delta(before, st.read())
    print(step["virtual_ns"], step["slow_read_misses"])

The counters are machine-wide (all vCPUs, kernel and user); take differences around the region of
interest. Loads libsentinel_slowtier.so from $SENTINEL_GUEST_SLOWTIER_LIB (set by scripts/numa-guest.sh
when SENTINEL_GUEST_SLOW_TIER is on) or the repository's build/lib. docs/slow-tier-emulator.md.
"""
import ctypes
import os

MAX_VCPUS = 16

_COUNTER_KEYS = ("instructions", "virtual_ns", "busy_virtual_ns", "fast_read_misses",
                 "fast_write_misses", "slow_read_misses", "slow_write_misses", "fast_writebacks",
                 "slow_writebacks", "other_ram_accesses")

# Where the time went: parts of the counters above (include/sentinel/slowtier.h).
_BREAKDOWN_KEYS = ("kernel_instructions", "string_elements", "fast_streamed_misses",
                   "slow_streamed_misses", "kernel_fast_misses", "kernel_slow_misses")
_ALL_KEYS = _COUNTER_KEYS + _BREAKDOWN_KEYS


class Counters(ctypes.Structure):
    """struct sentinel_slowtier_counters (include/sentinel/slowtier.h)."""
    _fields_ = ([(k, ctypes.c_uint64) for k in _COUNTER_KEYS] +
                [("vcpu", ctypes.c_uint32), ("n_vcpus", ctypes.c_uint32),
                 ("mailbox_node", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                 ("vcpu_virtual_ns", ctypes.c_uint64 * MAX_VCPUS),
                 ("vcpu_instructions", ctypes.c_uint64 * MAX_VCPUS)] +
                [(k, ctypes.c_uint64) for k in _BREAKDOWN_KEYS])


def _default_lib():
    env = os.environ.get("SENTINEL_GUEST_SLOWTIER_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "lib", "libsentinel_slowtier.so")


class SlowTier:
    def __init__(self, lib_path=None):
        self._lib = ctypes.CDLL(lib_path or _default_lib(), use_errno=True)
        self._lib.sentinel_slowtier_read.argtypes = [ctypes.POINTER(Counters)]
        self._lib.sentinel_slowtier_read.restype = ctypes.c_int
        self._buf = Counters()
        self.read()  # fail early when no plugin answers

    def read(self):
        """The counters now, as a dict of ints (plus per-vCPU lists)."""
        if self._lib.sentinel_slowtier_read(ctypes.byref(self._buf)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "no slow-tier plugin answered (SENTINEL_GUEST_SLOW_TIER off?)")
        c = self._buf
        out = {k: int(getattr(c, k)) for k in _ALL_KEYS}
        n = min(c.n_vcpus, MAX_VCPUS)
        out["vcpu"] = int(c.vcpu)
        out["mailbox_node"] = int(c.mailbox_node)
        out["vcpu_virtual_ns"] = [int(x) for x in c.vcpu_virtual_ns[:n]]
        out["vcpu_instructions"] = [int(x) for x in c.vcpu_instructions[:n]]
        return out

    @staticmethod
    def delta(before, after):
        """after - before for every counter (virtual_ns: elapsed virtual time)."""
        return {k: after[k] - before[k] for k in _ALL_KEYS if k in before and k in after}


if __name__ == "__main__":
    import json
    print(json.dumps(SlowTier().read()))
