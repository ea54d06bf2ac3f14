import * as assert from 'node:assert/strict';
import { COMMANDS } from '../../../src/cli/main';
import { TARGET_OPTIONS } from '../../../src/cli/targetOptions';
import { AGENT_OPTIONS, AgentOptionSpec } from '../../../src/remote/agentOptions';

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

describe('infbench usage texts', () => {
  const tabled = COMMANDS.filter((c) => c.options);

  it('the phase commands parse from one table each', () => {
    assert.deepEqual(tabled.map((c) => c.name).sort(), ['macro', 'micro', 'profile']);
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
      const agent = Object.values(AGENT_OPTIONS[command.name as keyof typeof AGENT_OPTIONS] as Record<string, AgentOptionSpec>);
      for (const [flag, parse] of Object.entries(command.options!)) {
        const spec = agent.find((s) => s.flag === `--${flag}` || s.aliases?.includes(`--${flag}`));
        if (!spec || flag in TARGET_OPTIONS) continue;
        assert.equal(parse.type, spec.kind === 'flag' ? 'boolean' : 'string', `--${flag}`);
        assert.equal(parse.multiple ?? false, spec.kind === 'strs', `--${flag} repeatable`);
        // The usage says the agent's help, or the campaign's own words where its default differs.
        if (spec.flag === `--${flag}` && flag !== 'concurrency')
          assert.ok(command.usage.includes(spec.help.split(' ').slice(0, 4).join(' ')), `--${flag}'s help`);
      }
    });
  }
});
