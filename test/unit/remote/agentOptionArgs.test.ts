import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { macroAgentArgs } from '../../../src/core/macro/options';
import { microAgentArgs } from '../../../src/core/micro/options';
import { profileAgentArgs } from '../../../src/core/phases/profile';
import { AgentOptionError, agentOptionArgs, takesApiKey } from '../../../src/remote/agentOptionArgs';
import { AGENT_OPTIONS } from '../../../src/remote/agentOptions';

/** What the agent's own argparse makes of a command line (its parser, as built from options.py). */
function agentParses(command: string, argv: string[]): { ok: boolean; values: Record<string, unknown>; stderr: string } {
  const script = [
    'import argparse, importlib, json, sys',
    'from infbench_agent import cli',
    'p = argparse.ArgumentParser()',
    'importlib.import_module(cli.COMMANDS[sys.argv[1]]).add_arguments(p)',
    'print(json.dumps(vars(p.parse_args(json.loads(sys.argv[2])))))',
  ].join('\n');
  const r = spawnSync('python3', ['-c', script, command, JSON.stringify(argv)], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: join(process.cwd(), 'agent') },
  });
  return { ok: r.status === 0, values: r.status === 0 ? (JSON.parse(r.stdout) as Record<string, unknown>) : {}, stderr: r.stderr };
}

describe("the agent's command lines, from its one option table", () => {
  it('writes the flags in the order the options are given, leaving out what is unset', () => {
    assert.deepEqual(
      agentOptionArgs('micro', { model: 'kimi-k2.5', tp: 8, allowBusy: true, shape: ['a=1x2', 'b=3x4'], hidden: undefined, cpu: undefined } as never),
      ['--model', 'kimi-k2.5', '--tp', '8', '--allow-busy', '--shape', 'a=1x2', '--shape', 'b=3x4'],
    );
  });

  it('refuses, by name, an option the command does not take instead of letting the agent fail on it', () => {
    // `cpu` is collective's, not micro's: the types refuse it; this is the check for a caller that went around them.
    assert.throws(() => agentOptionArgs('micro', { cpu: true } as never), AgentOptionError);
    assert.throws(() => agentOptionArgs('micro', { cpu: true } as never), /micro command takes no option "cpu"/);
  });

  it('every command takes the API key from stdin, and none has a field for the key itself', () => {
    for (const command of Object.keys(AGENT_OPTIONS)) {
      assert.ok(takesApiKey(command), command);
      assert.ok(!('apiKey' in AGENT_OPTIONS[command as keyof typeof AGENT_OPTIONS]), `${command} has no apiKey field`);
    }
  });

  it("what core builds for macro, micro and profile is what the agent's argparse reads back", () => {
    const micro = microAgentArgs({
      model: 'kimi-k2.5',
      tp: 8,
      m: [1, 8],
      shapes: ['x=8x16'],
      device: 'cpu',
      skip: ['launch'],
      allowBusy: true,
      arBackend: 'gloo',
    });
    const parsedMicro = agentParses('micro', [...micro, '--api-key-stdin']);
    assert.ok(parsedMicro.ok, parsedMicro.stderr);
    assert.equal(parsedMicro.values.tp, 8);
    assert.deepEqual(parsedMicro.values.shape, ['x=8x16']);
    assert.equal(parsedMicro.values.api_key_stdin, true);

    const macro = macroAgentArgs({ requestRate: [2, Infinity], maxConcurrency: 4, rangeRatio: 0.25, goodput: { ttft: 500 }, workers: 2 }, 'http://h:8000');
    const parsedMacro = agentParses('macro', macro);
    assert.ok(parsedMacro.ok, parsedMacro.stderr);
    assert.equal(parsedMacro.values.request_rate, '2,inf');
    assert.equal(parsedMacro.values.range_ratio, 0.25);

    const profile = profileAgentArgs(
      { concurrency: 2, outputLen: 16, traceDir: '/t', stopTimeoutS: 30, delaySteps: 4, numSteps: 8, recordShapes: true },
      'http://h:8000',
      2,
    );
    const parsedProfile = agentParses('profile', profile);
    assert.ok(parsedProfile.ok, parsedProfile.stderr);
    assert.equal(parsedProfile.values.nodes, 2);
    assert.equal(parsedProfile.values.stop_timeout, 30);
    // SGLang's bounded capture reaches the agent as its own flags.
    assert.deepEqual(
      [parsedProfile.values.delay_steps, parsedProfile.values.num_steps, parsedProfile.values.record_shapes, parsedProfile.values.with_stack],
      [4, 8, true, false],
    );
  });
});
