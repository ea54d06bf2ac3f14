"""The agent's packages keep one order, as ESLint keeps core's layers (eslint.config.mjs): read from every module's
imports with `ast`, those inside functions too, so that an import moved into a function to dodge a cycle is seen.

Lowest first. A module imports modules of its own layer or of a layer below it, never one above; the phase
packages of one layer (micro, macro, profile) stand side by side and import none of each other; and no two
modules import each other, however far round.
"""
import ast
import os
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent", "infbench_agent")

LAYERS = (
    # The package itself and what every command shares: versions, events, the API key kept secret.
    ("__init__", "version", "simulator_mark", "events", "auth"),
    # Every request to the inference server, but the load generator's own streams (macro/client.py).
    ("http",),
    # The one table of options, and the models whose presets it names (models asks the server which it serves).
    ("models", "options"),
    ("probe",),
    ("server",),
    ("micro", "macro", "profile"),
    # The entry: dispatch to the commands, and the heartbeat that stops an agent nobody listens to.
    ("cli", "controller", "__main__"),
)
# Packages of one layer that import none of each other.
PEERS = ("micro", "macro", "profile")
# Modules that may open a connection to the server: http.py, and the load generator's measured client.
HTTP_MODULES = ("http", "macro.client")
# What opening a connection to the server looks like in the standard library.
CONNECTING_CALLS = ("urlopen", "create_connection", "HTTPConnection", "HTTPSConnection")


def modules_of(root):
    """{dotted name under the package: path}; a package is named by its folder (its __init__.py), the root's as "__init__"."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, ".")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            stem = name[:-3]
            if stem == "__init__":
                found[prefix or "__init__"] = os.path.join(folder, name)
            else:
                found[f"{prefix}.{stem}" if prefix else stem] = os.path.join(folder, name)
    return found


def imports_of(path, name, package, modules):
    """[(imported module's name under the package, line)] for every import in the file, at any depth."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = os.path.basename(path) == "__init__.py"
    here = [] if name == "__init__" else name.split(".")
    found = []

    def inside(dotted):
        """`package.a.b` as "a.b", the package itself as "__init__"; None for anything else (the standard library)."""
        if dotted == package:
            return "__init__"
        if dotted.startswith(package + "."):
            return dotted[len(package) + 1 :]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [inside(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_package else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                dotted = ".".join([package] + base + ([node.module] if node.module else []))
            else:
                dotted = node.module or ""
            module = inside(dotted)
            if module is None:
                continue
            # `from package.x import y` imports package.x.y where that is a module, else a name of package.x.
            targets = []
            for a in node.names:
                sub = a.name if module == "__init__" else f"{module}.{a.name}"
                targets.append(sub if sub in modules else module)
        else:
            continue
        for target in targets:
            if target is None:
                continue
            # Importing package.a.b runs package.a's __init__ first.
            parts = [] if target == "__init__" else target.split(".")
            for i in range(1, len(parts)):
                found.append((".".join(parts[:i]), node.lineno))
            found.append((target, node.lineno))
    return [(t, line) for t, line in found if t != name]


def unit_of(module):
    """The layer's unit a module belongs to: its top-level package, or itself at the top."""
    return module.split(".")[0]


def find_cycles(graph):
    """Each group of modules that import one another, however far round (Tarjan's strongly connected components)."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def check_package(root, package, layers=LAYERS, peers=PEERS, http_modules=HTTP_MODULES):
    """Every way the package at `root` breaks its order, in words; [] when it keeps it."""
    modules = modules_of(root)
    rank = {unit: i for i, layer in enumerate(layers) for unit in layer}
    problems = []
    graph = {}
    for name, path in modules.items():
        where = os.path.relpath(path, os.path.dirname(root))
        unit = unit_of(name)
        if unit not in rank:
            problems.append(f"{where} is in no layer: add `{unit}` to LAYERS where it belongs")
            continue
        graph[name] = set()
        for target, line in imports_of(path, name, package, modules):
            graph[name].add(target)
            other = unit_of(target)
            if other == unit or other not in rank:
                continue
            if rank[other] > rank[unit]:
                problems.append(f"{where}:{line} imports {package}.{target}: {unit} is below {other}, so it may not import it")
            elif rank[other] == rank[unit] and unit in peers and other in peers:
                problems.append(
                    f"{where}:{line} imports {package}.{target}: {unit} and {other} stand side by side and import none of each other"
                )
        problems.extend(connections_outside_http(path, where, name, http_modules))
    for group in find_cycles(graph):
        problems.append("an import cycle: " + " -> ".join(f"{package}.{m}" for m in group + group[:1]))
    return problems


def connections_outside_http(path, where, name, http_modules):
    if name in http_modules:
        return []
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in CONNECTING_CALLS:
                found.append(f"{where}:{node.lineno} calls {called}: requests to the server go through http.py")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n == "http.client" or n.startswith("http.client.") for n in names):
                found.append(f"{where}:{node.lineno} imports http.client: requests to the server go through http.py")
    return found


def plant(top, files):
    """A package `fake` in the folder `top`, from {relative path: source}; returns its folder."""
    root = os.path.join(top, "fake")
    for rel, text in {"__init__.py": "", **files}.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
    return root


FAKE_LAYERS = (("__init__", "events"), ("http",), ("probe",), ("macro", "micro"), ("cli",))
FAKE_PEERS = ("macro", "micro")


def check_fake(files):
    with tempfile.TemporaryDirectory() as top:
        return check_package(plant(top, files), "fake", FAKE_LAYERS, FAKE_PEERS, ("http",))


class AgentImportsTest(unittest.TestCase):
    def test_the_agent_keeps_its_package_order_and_has_no_import_cycle(self):
        self.assertEqual(check_package(AGENT, "infbench_agent"), [])

    def test_every_command_module_the_cli_names_is_there(self):
        # The cli imports its commands by name (importlib), which no import statement shows.
        from infbench_agent import cli

        modules = modules_of(AGENT)
        for command, module in cli.COMMANDS.items():
            with self.subTest(command=command):
                self.assertIn(module[len("infbench_agent.") :], modules)

    def test_the_check_reads_every_kind_of_import(self):
        top = tempfile.TemporaryDirectory()
        self.addCleanup(top.cleanup)
        root = plant(
            top.name,
            {
                "events.py": "",
                "probe/__init__.py": "",
                "probe/argv.py": "",
                "probe/command.py": """
                    import fake.events
                    from fake import http
                    from . import argv
                    from .argv import x

                    def later():
                        from fake.probe import argv as again
                    """,
                "http.py": "",
            },
        )
        modules = modules_of(root)
        found = sorted({t for t, _ in imports_of(os.path.join(root, "probe", "command.py"), "probe.command", "fake", modules)})
        self.assertEqual(found, ["events", "http", "probe", "probe.argv"])


class PlantedViolationsTest(unittest.TestCase):
    def test_a_planted_cycle_hidden_inside_a_function_is_reported(self):
        problems = check_fake(
            {
                "probe/__init__.py": "",
                "probe/command.py": "from fake.probe import served\n",
                "probe/served.py": "def flag():\n    from fake.probe import command  # imported here: command imports this module\n",
            }
        )
        self.assertEqual(problems, ["an import cycle: fake.probe.command -> fake.probe.served -> fake.probe.command"])

    def test_a_planted_cycle_between_low_modules_is_reported(self):
        problems = check_fake({"events.py": "from fake import http\n", "http.py": "from fake import events\n"})
        self.assertTrue(any(p.startswith("an import cycle: fake.events -> fake.http") for p in problems), problems)

    def test_a_planted_upward_import_is_reported(self):
        problems = check_fake(
            {
                "probe/__init__.py": "",
                "probe/command.py": "def run():\n    from fake.macro.drive import drive\n",
                "macro/__init__.py": "",
                "macro/drive.py": "",
            }
        )
        self.assertIn("fake/probe/command.py:2 imports fake.macro: probe is below macro, so it may not import it", problems)
        self.assertIn("fake/probe/command.py:2 imports fake.macro.drive: probe is below macro, so it may not import it", problems)
        self.assertEqual(len(problems), 2, problems)

    def test_a_planted_import_between_side_by_side_packages_is_reported(self):
        problems = check_fake(
            {"macro/__init__.py": "", "macro/levels.py": "from fake.micro import timing\n", "micro/__init__.py": "", "micro/timing.py": ""}
        )
        self.assertIn(
            "fake/macro/levels.py:1 imports fake.micro.timing: macro and micro stand side by side and import none of each other", problems
        )

    def test_a_planted_module_in_no_layer_is_reported(self):
        problems = check_fake({"helpers.py": ""})
        self.assertEqual(problems, ["fake/helpers.py is in no layer: add `helpers` to LAYERS where it belongs"])

    def test_a_planted_request_outside_http_is_reported(self):
        problems = check_fake(
            {"probe/__init__.py": "", "probe/command.py": "import urllib.request\n\ndef get(u):\n    return urllib.request.urlopen(u)\n"}
        )
        self.assertEqual(problems, ["fake/probe/command.py:4 calls urlopen: requests to the server go through http.py"])

    def test_a_package_that_keeps_its_order_passes(self):
        problems = check_fake(
            {
                "events.py": "",
                "http.py": "from fake import events\n",
                "probe/__init__.py": "",
                "probe/command.py": "from fake import events, http\n",
                "macro/__init__.py": "",
                "macro/drive.py": "from fake.probe import command\n",
                "cli.py": "def main():\n    from fake.macro import drive\n",
            }
        )
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main()
