"""An error's hint names the flags a front end says in its own words as remedies (data), never as text."""
import ast
import glob
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def remedy_flags():
    # The list VS Code has words for (src/shared/remedy.ts); the test reads it rather than keep a copy.
    with open(os.path.join(ROOT, "src", "shared", "remedy.ts"), encoding="utf-8") as f:
        block = re.search(r"REMEDY_FLAGS = \[(.*?)\] as const", f.read(), re.S)
    assert block, "REMEDY_FLAGS not found in src/shared/remedy.ts"
    return re.findall(r"'(--[a-z-]+)'", block.group(1))


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
