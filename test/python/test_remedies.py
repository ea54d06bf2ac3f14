"""An error's hint names what the user passes or runs as remedies (data) in `{n}` slots, never as text: each
front end then says them its own way (the CLI a flag, VS Code a setting or a command)."""
import ast
import glob
import os
import re
import unittest

from infbench_agent import events

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent", "infbench_agent")

# Flags a hint may name as text: not the user's to pass to infbench, but another program's, on the host.
NOT_THE_USERS = {
    ("profile/command.py", "--profiler-config"): "vLLM's, on the command line the user starts the server with",
    ("profile/command.py", "--capture-range"): "nsys's, on the command line the user starts the server under",
    ("profile/command.py", "--capture-range-end"): "nsys's, likewise",
    ("micro/collective.py", "--local-ranks"): "the agent's own, which the controller gives each host of a cluster",
    ("micro/collective.py", "--plan"): "the agent's own, which the controller runs on the head first",
}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def module_assignments():
    """{(module file name without .py, NAME): value node} for every module-level assignment in the agent, so that a hint
    or remedies kept in a constant (auth.KEY_HINT, WHICH_MODEL) are read as if written in place."""
    found = {}
    for path in glob.glob(os.path.join(AGENT, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        stem = os.path.basename(path)[:-3]
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                found[(stem, node.targets[0].id)] = node.value
    return found


def resolve(node, stem, assigned):
    if isinstance(node, ast.Name):
        return assigned.get((stem, node.id), node)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return assigned.get((node.value.id, node.attr), node)
    if isinstance(node, ast.Subscript):
        # auth.KEY_HINT[0].upper() + auth.KEY_HINT[1:]: the constant's text, as near as matters here.
        return resolve(node.value, stem, assigned)
    return node


def literal_text(node, stem, assigned):
    """The literal parts of a string or f-string argument (the parts a reader sees in the hint)."""
    node = resolve(node, stem, assigned)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp):
        return literal_text(node.left, stem, assigned) + literal_text(node.right, stem, assigned)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        # "...".upper(), a constant's first letter raised.
        return literal_text(node.func.value, stem, assigned)
    return ""


def argument(node, index, keyword):
    if len(node.args) > index:
        return node.args[index]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def hint_of(node):
    """(hint node, remedies node or None) of a call that says an error or a warning; None for any other call."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name in ("AgentError", "error"):
        return argument(node, 2, "hint"), argument(node, 3, "remedies")
    if name == "ModelError":
        return argument(node, 1, "hint"), argument(node, 2, "remedies")
    level = argument(node, 1, "level")
    if name == "log" and isinstance(level, ast.Constant) and level.value == "warn":
        # A warning's message is read with its hint: either may name what to do.
        hint = argument(node, 3, "hint")
        message = argument(node, 0, "message")
        return (message if hint is None else ast.BinOp(message, ast.Add(), hint)), argument(node, 4, "remedies")
    return None


def hints():
    """(file under the agent, line, hint text, number of remedies given: None where not written as a list) for every
    AgentError, events.error and ModelError, and every warning logged (whose message is read with its hint)."""
    assigned = module_assignments()
    for path in sorted(glob.glob(os.path.join(AGENT, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, AGENT).replace(os.sep, "/")
        stem = os.path.basename(path)[:-3]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            found = hint_of(node) if isinstance(node, ast.Call) else None
            if found is None or found[0] is None:
                continue
            hint, given = found
            given = resolve(given, stem, assigned) if given is not None else None
            count = 0 if given is None else len(given.elts) if isinstance(given, ast.List) else None
            yield rel, node.lineno, literal_text(hint, stem, assigned), count


class HintRemediesTest(unittest.TestCase):
    def test_no_hint_names_a_flag_as_text(self):
        named, excused = [], set()
        for rel, line, text, _ in hints():
            for flag in FLAG.findall(text):
                if (rel, flag) in NOT_THE_USERS:
                    excused.add((rel, flag))
                else:
                    named.append(f"{rel}:{line} {flag}")
        self.assertEqual(named, [], "name these flags as remedies (events.flag) in a {n} slot of the hint")
        self.assertEqual(set(NOT_THE_USERS) - excused, set(), "these exceptions excuse nothing any more: remove them")

    def test_the_scan_sees_a_flag_written_into_a_hint(self):
        # The scan above passes only if it reads the hints at all: a planted one must be caught.
        tree = ast.parse('raise AgentError("no_gpu", "none", f"or pass --device {x}")')
        call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
        self.assertEqual(FLAG.findall(literal_text(argument(call, 2, "hint"), "x", {})), ["--device"])
        self.assertGreater(len(list(hints())), 80)

    def test_the_scan_reads_a_warnings_hint_and_its_remedies(self):
        tree = ast.parse('events.log(f"{x}: late", "warn", hint="raise --workers or {0}", remedies=[events.flag("--workers")])')
        hint, given = hint_of(next(n for n in ast.walk(tree) if isinstance(n, ast.Call)))
        self.assertEqual(FLAG.findall(literal_text(hint, "x", {})), ["--workers"])
        self.assertEqual(len(given.elts), 1)

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
        for rel, line, text, count in hints():
            slots = {int(n) for n in re.findall(r"\{(\d+)\}", text)}
            if count is None or (not slots and not count):
                continue
            checked += 1
            self.assertEqual(slots, set(range(count)), f"{rel}:{line}: slots {sorted(slots)} for {count} remedies")
        self.assertGreater(checked, 30)


if __name__ == "__main__":
    unittest.main()
