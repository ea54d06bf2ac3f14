"""The agent's options: one table (options.py) from which its argparse and the controller's TypeScript are made."""
import argparse
import importlib
import os
import subprocess
import sys
import unittest

from infbench_agent import cli, options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parser_of(command):
    p = argparse.ArgumentParser()
    importlib.import_module(cli.COMMANDS[command]).add_arguments(p)
    return p


def positional(command):
    """What a command needs besides its options: `server` its action."""
    return [options.SERVER_ACTIONS[0]] if command == "server" else []


class OptionsTableTest(unittest.TestCase):
    def test_the_typescript_options_are_generated_from_this_table(self):
        out = subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "gen-agent-options.py"), "--check"], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_the_table_defines_each_flag_once_per_command(self):
        self.assertEqual(options.check_table([o for c in options.COMMANDS for o in cli.command_options(c) if o not in options.OPTIONS]), [])

    def test_every_command_that_talks_to_the_server_takes_the_key_from_stdin(self):
        for command in options.COMMANDS:
            with self.subTest(command=command):
                self.assertTrue(parser_of(command).parse_args([*positional(command), "--api-key-stdin"]).api_key_stdin)

    def test_each_commands_parser_has_exactly_the_tables_flags(self):
        for command in options.COMMANDS:
            with self.subTest(command=command):
                flags = {s for a in parser_of(command)._actions for s in a.option_strings} - {"-h", "--help"}
                table = {f for o in cli.command_options(command) for f in (o.flag, *o.aliases)}
                self.assertEqual(flags, table)

    def test_every_command_the_agent_dispatches_takes_its_options_from_the_table(self):
        # A command left out of the table would write its options by hand, and the controller its command line.
        self.assertEqual(set(options.COMMANDS), set(cli.COMMANDS))

    def test_a_flag_written_outside_the_table_is_caught(self):
        p = parser_of("server")
        p.add_argument("--by-hand", default=None)
        flags = {s for a in p._actions for s in a.option_strings} - {"-h", "--help"}
        table = {f for o in options.options_of("server") for f in (o.flag, *o.aliases)}
        self.assertEqual(flags - table, {"--by-hand"})

    def test_the_server_command_takes_its_actions_and_options_from_the_table(self):
        args = parser_of("server").parse_args(["stop", "--pid", "736", "--start-ticks", "41", "--stop-timeout", "60", "--recipe-stdin"])
        self.assertEqual((args.action, args.pid, args.start_ticks, args.stop_timeout, args.recipe_stdin), ("stop", 736, 41, 60.0, True))
        self.assertEqual((args.url, args.timeout, args.start_timeout), (options.DEFAULT_SERVER_URL, 3.0, 3600.0))
        with self.assertRaises(SystemExit), open(os.devnull, "w") as devnull:
            stderr, sys.stderr = sys.stderr, devnull
            try:
                parser_of("server").parse_args(["restart"])
            finally:
                sys.stderr = stderr

    def test_a_minimum_is_only_on_a_number(self):
        self.assertEqual([o.flag for o in options.OPTIONS if o.minimum is not None and o.kind not in ("int", "float")], [])


if __name__ == "__main__":
    unittest.main()
