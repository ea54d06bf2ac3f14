import io
import json
import unittest
from contextlib import redirect_stdout

from infbench_agent import events


class EventLineTest(unittest.TestCase):
    def test_one_versioned_json_object_per_line(self):
        buf = io.StringIO()
        with redirect_stdout(buf):
            events.emit(events.PROGRESS, done=1, total=2, message="level 1 of 2\nnext")
            events.log("hello")
        lines = buf.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        first = json.loads(lines[0])
        self.assertEqual(first["v"], events.SCHEMA_VERSION)
        self.assertEqual(first["type"], "progress")
        self.assertEqual(first["message"], "level 1 of 2\nnext")

    def test_refuses_nan_rather_than_writing_invalid_json(self):
        with redirect_stdout(io.StringIO()):
            with self.assertRaises(ValueError):
                events.emit(events.LOG, level="info", message=float("nan"))


if __name__ == "__main__":
    unittest.main()
