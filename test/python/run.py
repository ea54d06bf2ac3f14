"""Runs the agent's Python tests (standard library unittest) and writes the counts for `npm test`."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "agent"))
sys.path.insert(0, ROOT)

suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
result = unittest.TextTestRunner(verbosity=2).run(suite)
failed = len(result.failures) + len(result.errors)
summary_file = os.environ.get("INFBENCH_SUMMARY_FILE")
if summary_file:
    with open(summary_file, "w") as f:
        json.dump(
            {
                "passed": result.testsRun - failed - len(result.skipped),
                "failed": failed,
                "pending": len(result.skipped),
                "tests": result.testsRun,
            },
            f,
        )
sys.exit(0 if result.wasSuccessful() else 1)
