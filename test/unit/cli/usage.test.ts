import * as assert from 'node:assert/strict';
import { COMMANDS } from '../../../src/cli/main';
import { TARGET_OPTIONS } from '../../../src/cli/targetOptions';
import { AGENT_CLI_FLAGS, AGENT_OPTIONS, AgentOptionCommand, AgentOptionSpec } from '../../../src/remote/agentOptions';

// The flags a usage text offers: each option line's flag column (`  --port N, --user NAME`, up to the
// gap before its help), and an alias said on its flag's line ("(also --random-range-ratio)").
function flagsInUsage(usage: string): Set<string> {
  const flags = new Set<string>();
  for (const line of usage.split('\n')) {
    if (!/^ {2}--/.test(line)) continue;
    for (const m of line
      .trim()
      .split(/ {2,}/)[0]
      .matchAll(/--([a-z0-9-]+)/g))
      flags.add(m[1]);
  }
  // An alias's words may wrap onto the next line.
  for (const m of usage.replace(/\s+/g, ' ').matchAll(/\(also ((?:--[a-z0-9-]+(?:, )?)+)\)/g))
    for (const a of m[1].matchAll(/--([a-z0-9-]+)/g)) flags.add(a[1]);
  return flags;
}

/**
 * The agent's row of a flag the command parses from the table, or undefined for one of its own: agentFlags
 * hands out the table's own entries, so a flag of the CLI's that shares an agent flag's name (server's
 * --recipe FILE) is not taken for it.
 */
function agentRowOf(flag: string, parse: unknown): AgentOptionSpec | undefined {
  for (const [command, flags] of Object.entries(AGENT_CLI_FLAGS) as [AgentOptionCommand, Record<string, unknown>][]) {
    if (flags[flag] !== parse) continue;
    return Object.values(AGENT_OPTIONS[command] as Record<string, AgentOptionSpec>).find((s) => s.flag === `--${flag}` || s.aliases?.includes(`--${flag}`));
  }
  return undefined;
}

// Where a command's words for a flag are its own, as its usage passes them to agentFlagUsage.
const OWN_HELP = new Set(['macro --concurrency', 'configs --concurrency', 'configs --seed', 'profile --profiler', 'profile --nsys']);

describe('infbench usage texts', () => {
  const tabled = COMMANDS.filter((c) => c.options);

  it('the phase commands parse from one table each', () => {
    assert.deepEqual(tabled.map((c) => c.name).sort(), ['configs', 'macro', 'micro', 'probe', 'profile', 'server']);
  });

  for (const command of tabled) {
    it(`infbench ${command.name} --help offers exactly the flags it parses`, () => {
      const parsed = new Set(Object.keys(command.options!));
      const offered = flagsInUsage(command.usage);
      assert.deepEqual(
        [...parsed].filter((f) => !offered.has(f)),
        [],
        'parsed but not in the usage text',
      );
      assert.deepEqual(
        [...offered].filter((f) => !parsed.has(f)),
        [],
        'in the usage text but not parsed',
      );
    });

    it(`infbench ${command.name}: each phase flag it hands to the agent has the agent's value type and help`, () => {
      for (const [flag, parse] of Object.entries(command.options!)) {
        const spec = agentRowOf(flag, parse);
        if (!spec || flag in TARGET_OPTIONS) continue;
        assert.equal(parse.type, spec.kind === 'flag' ? 'boolean' : 'string', `--${flag}`);
        assert.equal(parse.multiple ?? false, spec.kind === 'strs', `--${flag} repeatable`);
        // The usage says the agent's help, or the campaign's own words where its default differs.
        if (spec.flag === `--${flag}` && !OWN_HELP.has(`${command.name} --${flag}`))
          assert.ok(command.usage.includes(spec.help.split(' ').slice(0, 4).join(' ')), `--${flag}'s help`);
      }
    });
  }
});
