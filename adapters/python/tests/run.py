#!/usr/bin/env python3
"""Runs the Python adapter tests: `python3 adapters/python/tests/run.py`. Exit 0 when they pass, 1 when one fails;
prints `SKIP: <reason>` and exits 0 when numpy is missing (the build calls this and reports the skip)."""

import os
import sys
import unittest

if sys.version_info < (3, 10):
    print("SKIP: Python %d.%d is older than 3.10" % sys.version_info[:2])
    sys.exit(0)
try:
    import numpy  # noqa: F401
except ImportError:
    print("SKIP: numpy is not installed for %s (pip install numpy)" % sys.executable)
    sys.exit(0)

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, top_level_dir=os.path.dirname(here))
result = unittest.TextTestRunner(verbosity=1).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
