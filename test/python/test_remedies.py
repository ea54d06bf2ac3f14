"""An error's hint names the flags a front end says in its own words as remedies (data), never as text."""
import ast
import glob
import os
import re
import unittest

from infbench_agent import events

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def remedy_flags():
    # The list VS Code has words for (generated into src/shared/remedyFlags.ts).
    return events.REMEDY_FLAGS


def literal_text(node):
    """The literal parts of a string or f-string argument (the parts a reader sees in the hint)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp):
        return literal_text(node.left) + literal_text(node.right)
    return ""


def hints():
    """(where, hint text, number of remedies given) for every AgentError and events.error in the agent."""
    for path in sorted(glob.glob(os.path.join(ROOT, "agent", "infbench_agent", "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name not in ("AgentError", "error") or len(node.args) < 3:
                continue
            given = node.args[3] if len(node.args) > 3 else next((k.value for k in node.keywords if k.arg == "remedies"), None)
            count = len(given.elts) if isinstance(given, ast.List) else (None if given is not None else 0)
            yield f"{os.path.basename(path)}:{node.lineno}", literal_text(node.args[2]), count


class HintRemediesTest(unittest.TestCase):
    def test_no_hint_names_a_flag_that_a_front_end_says_its_own_way(self):
        flags = remedy_flags()
        self.assertIn("--url", flags)
        named = [(where, flag) for where, text, _ in hints() for flag in flags if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)]
        self.assertEqual(named, [], "name these flags as remedies (events.flag) in a {n} slot of the hint")

    def test_a_remedy_names_only_a_listed_flag_or_command(self):
        self.assertEqual(events.flag("--url"), {"kind": "flag", "flag": "--url"})
        # A typo would reach VS Code as a flag it has no words for.
        with self.assertRaisesRegex(ValueError, "REMEDY_FLAGS"):
            events.flag("--urll")
        self.assertEqual(events.command("micro", "--stop-server"), {"kind": "command", "command": "micro", "flags": ["--stop-server"]})
        with self.assertRaisesRegex(ValueError, "REMEDY_COMMANDS"):
            events.command("profile --profiler nsys")

    def test_each_slot_of_a_hint_has_its_remedy(self):
        checked = 0
        for where, text, count in hints():
            slots = {int(n) for n in re.findall(r"\{(\d+)\}", text)}
            if count is None or not slots:
                continue
            checked += 1
            self.assertEqual(slots, set(range(count)), f"{where}: slots {sorted(slots)} for {count} remedies")
        self.assertGreater(checked, 5)


if __name__ == "__main__":
    unittest.main()
