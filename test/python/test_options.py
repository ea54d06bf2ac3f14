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


class OptionsTableTest(unittest.TestCase):
    def test_the_typescript_options_are_generated_from_this_table(self):
        out = subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "gen-agent-options.py"), "--check"], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_the_table_defines_each_flag_once_per_command(self):
        self.assertEqual(options.check_table(), [])

    def test_every_command_that_talks_to_the_server_takes_the_key_from_stdin(self):
        for command in options.COMMANDS:
            with self.subTest(command=command):
                self.assertTrue(parser_of(command).parse_args(["--api-key-stdin"]).api_key_stdin)

    def test_each_commands_parser_has_exactly_the_tables_flags(self):
        for command in options.COMMANDS:
            with self.subTest(command=command):
                flags = {s for a in parser_of(command)._actions for s in a.option_strings} - {"-h", "--help"}
                table = {f for o in options.options_of(command) for f in (o.flag, *o.aliases)}
                self.assertEqual(flags, table)

    def test_the_agent_dispatches_the_tables_commands(self):
        self.assertLessEqual(set(options.COMMANDS), set(cli.COMMANDS))


if __name__ == "__main__":
    unittest.main()
