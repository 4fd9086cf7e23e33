"""Runs every tests/python/test_*.py with unittest and ends with cmocka's
summary lines ("[  PASSED  ] N test(s)." / "[  FAILED  ] N test(s),"), which
scripts/run-tests.sh adds to the closing count. Exit status 0 only when all
passed."""

import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
passed = result.testsRun - failed - skipped
if skipped:
    print("[  SKIPPED ] %d test(s), listed above (not counted)." % skipped)
print("[  PASSED  ] %d test(s)." % passed)
if failed:
    print("[  FAILED  ] %d test(s), listed above." % failed)
sys.exit(0 if failed == 0 and result.testsRun > 0 else 1)
