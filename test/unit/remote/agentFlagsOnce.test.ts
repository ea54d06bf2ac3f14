import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AGENT_OPTIONS, AgentOptionSpec } from '../../../src/remote/agentOptions';

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
