"""Tests of the pure-Python `sentinel` module (python/sentinel) with PyTorch, with and without the
preload: a no-op without it, step marks and live counters with it, the same losses either way, and
its ctypes mirror of struct sentinel_counters in step with include/sentinel/sentinel.h.

Usage: /usr/bin/python3 sentinel_module_test.py LIBSENTINEL_SO PYTHON_MODULE_DIR SENTINEL_H"""
import ctypes
import json
import os
import re
import subprocess
import sys
import unittest

LIB, MODULE_DIR, HEADER = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, MODULE_DIR)
import sentinel  # noqa: E402  (the module under test, from the build tree)

C_TYPES = {"uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32,
           "int32_t": ctypes.c_int32}


def train(preload):
    env = dict(os.environ, PYTHONPATH=MODULE_DIR, OMP_NUM_THREADS="1")
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = LIB
        env["SENTINEL_LOG"] = "warn"
    out = subprocess.run([sys.executable, os.path.join(HERE, "marked_training.py")], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class WithoutPreload(unittest.TestCase):
    def test_everything_is_a_no_op(self):
        self.assertFalse(sentinel.loaded())
        self.assertFalse(sentinel.active())
        self.assertEqual(sentinel.stats(), {})
        self.assertIsNone(sentinel.step())


class WithPyTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain = train(preload=False)
        cls.under = train(preload=True)

    def test_plain_run_sees_no_sentinel(self):
        self.assertFalse(self.plain["loaded"])
        self.assertFalse(self.plain["active"])
        self.assertEqual(self.plain["stats_after"], {})

    def test_preloaded_run_is_active_and_counts(self):
        self.assertTrue(self.under["loaded"])
        self.assertTrue(self.under["active"])
        after = self.under["stats_after"]
        self.assertEqual(set(after), {name for name, _ in sentinel._Counters._fields_})
        self.assertGreater(after["objects_tracked"], 0)
        self.assertGreater(after["live_bytes"], 0)
        self.assertGreaterEqual(after["peak_object_bytes"], after["live_bytes"])

    def test_marked_steps_are_the_steps_sentinel_counts(self):
        # step() before step k (k = 0..5): when step k's stats are read, k steps are complete.
        self.assertEqual(self.under["steps_seen"], list(range(len(self.under["losses"]))))
        self.assertEqual(self.under["stats_after"]["steps_detected"], len(self.under["losses"]) - 1)
        self.assertEqual(self.under["stats_after"]["current_step"], len(self.under["losses"]) - 1)

    def test_losses_are_bit_identical(self):
        self.assertEqual(len(self.plain["losses"]), 6)
        self.assertEqual(self.plain["losses"], self.under["losses"])


class MirrorOfTheHeader(unittest.TestCase):
    def test_fields_match_struct_sentinel_counters(self):
        with open(HEADER) as f:
            text = f.read()
        body = re.search(r"struct sentinel_counters \{(.*?)\};", text, re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = [(m.group(2), C_TYPES[m.group(1)]) for m in re.finditer(r"(\w+)\s+(\w+);", body)]
        mirror = list(sentinel._Counters._fields_)
        self.assertEqual(fields, mirror)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
