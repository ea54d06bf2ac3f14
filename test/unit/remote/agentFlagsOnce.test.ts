import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AGENT_CLI_FLAGS, AGENT_OPTIONS, AgentOptionSpec } from '../../../src/remote/agentOptions';
import { COMMANDS } from '../../../src/cli/main';

// Every flag the agent's option table defines, for any command (aliases included).
const AGENT_FLAGS = new Set(
  Object.values(AGENT_OPTIONS).flatMap((specs) => Object.values(specs as Record<string, AgentOptionSpec>).flatMap((s) => [s.flag, ...(s.aliases ?? [])])),
);
// Code that builds an agent command line: it calls the agent or the table's argv builder.
const BUILDS_AGENT_ARGV = /\brunAgentCommand\(|\bagentArgv\(|\bagentOptionArgs\(|\bserverArgs\(/;
// A string that is a flag and nothing else ('--url'): an argument, where a message would hold more words.
const FLAG_LITERAL = /(['"`])(--[a-z][a-z0-9-]*)\1/g;

/** The agent's flags that `source` writes as literals, where it builds an agent command line. */
function flagsWrittenOutsideTheTable(source: string): string[] {
  if (!BUILDS_AGENT_ARGV.test(source)) return [];
  return [...source.matchAll(FLAG_LITERAL)].map((m) => m[2]).filter((flag) => AGENT_FLAGS.has(flag));
}

/** The flags a CLI command parses from the agent's table: agentFlags hands out the table's own entries. */
function flagsFromTheTable(options: Record<string, unknown>): Set<string> {
  const entries = new Set<unknown>(Object.values(AGENT_CLI_FLAGS).flatMap((flags) => Object.values(flags)));
  return new Set(Object.keys(options).filter((flag) => entries.has(options[flag])));
}

// A flag in a command's source, where a message or a usage line names it.
const FLAG_IN_TEXT = /(?<![\w-])--([a-z][a-z0-9-]*)(?![\w-])/g;

/** The `flags` that `source` names by hand, outside comments and the example command lines of its usage. */
function flagsNamedByHand(source: string, flags: Set<string>): string[] {
  return source
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/?\*)/.test(line) && !/^(Example|Search):/.test(line))
    .flatMap((line) => [...line.matchAll(FLAG_IN_TEXT)].map((m) => m[1]))
    .filter((flag) => flags.has(flag))
    .map((flag) => `--${flag}`);
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe("the agent's flags, written once", () => {
  it('no code that builds an agent command line writes one of its flags by hand: each comes from the table', () => {
    const root = join(__dirname, '..', '..', '..');
    const found = tsFiles(join(root, 'src'))
      // The table itself, as generated from agent/infbench_agent/options.py.
      .filter((path) => !path.endsWith(join('remote', 'agentOptions.ts')))
      .flatMap((path) => flagsWrittenOutsideTheTable(readFileSync(path, 'utf8')).map((flag) => `${relative(root, path)}: '${flag}'`));
    assert.deepEqual(found, [], 'pass these through agentOptionArgs (or serverArgs) instead');
  });

  it('catches a planted one: a server status whose --url is written by hand, or the key flag added as a literal', () => {
    assert.deepEqual(flagsWrittenOutsideTheTable("await runAgentCommand(t, agent, 'server', ['status', '--url', url], log, {});"), ['--url']);
    assert.deepEqual(flagsWrittenOutsideTheTable("const argv = agentArgv(agent, command, [...args, '--api-key-stdin']);"), ['--api-key-stdin']);
    // A flag named in a message, or a flag of another program, is not an agent argument.
    assert.deepEqual(flagsWrittenOutsideTheTable("runAgentCommand(t, a, 'macro', args, log, {}); throw new Error('give --slo \"ttft_p99<=2000\"');"), []);
    assert.deepEqual(flagsWrittenOutsideTheTable("spawn('nsys', ['--kineto', path]);"), []);
  });

  it('no CLI command names a flag it parses from the table by hand: its messages and usage take the name from the row', () => {
    const root = join(__dirname, '..', '..', '..');
    const found = COMMANDS.filter((c) => c.options).flatMap((command) => {
      const file = join(root, 'src', 'cli', 'commands', `${command.name}.ts`);
      const named = flagsNamedByHand(readFileSync(file, 'utf8'), flagsFromTheTable(command.options!));
      return named.map((flag) => `${relative(root, file)}: ${flag}`);
    });
    assert.deepEqual(found, [], 'name these with flagOf (src/cli/agentFlags.ts), or list them with agentFlagUsage');
  });

  it('catches a planted one: a message that writes --num-steps, but not a comment, an example or a flag of its own', () => {
    const flags = new Set(['num-steps', 'profiler']);
    assert.deepEqual(flagsNamedByHand("throw new UsageError('--num-steps takes a whole number');", flags), ['--num-steps']);
    assert.deepEqual(flagsNamedByHand("  --profiler torch|nsys     torch: the server's profiler", flags), ['--profiler']);
    assert.deepEqual(flagsNamedByHand('// --num-steps: SGLang only\nExample: infbench profile --num-steps 8', flags), []);
    assert.deepEqual(flagsNamedByHand("throw new UsageError(`${flagOf('profile', 'profiler')} nsys: leave out --restart-with-profiler.`);", flags), []);
    // A flag of the CLI's own that shares an agent flag's name is not one from the table.
    assert.deepEqual([...flagsFromTheTable({ recipe: { type: 'string' }, profiler: AGENT_CLI_FLAGS.profile.profiler })], ['profiler']);
  });

  it('the table writes the key flag and every server option the controller passes', () => {
    for (const name of [
      'apiKeyStdin',
      'url',
      'profilerDir',
      'profileDelayIterations',
      'profileMaxIterations',
      'nsys',
      'pid',
      'startTicks',
      'argvJson',
      'stopTimeout',
      'recipeStdin',
    ])
      assert.ok(name in AGENT_OPTIONS.server, name);
  });
});
