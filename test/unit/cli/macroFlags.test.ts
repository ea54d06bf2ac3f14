import * as assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/command';
import { macroOptionsFromFlags } from '../../../src/cli/commands/macro';
import { datasetText, macroAgentArgs } from '../../../src/core/macro/options';

describe('infbench macro flags', () => {
  it('reads the dataset, its file and the length range as vllm bench serve spells them', () => {
    assert.deepEqual(macroOptionsFromFlags({ 'dataset-name': 'sharegpt', 'dataset-path': '/d/ShareGPT_V3.json', 'sharegpt-output-len': '64' }), {
      api: 'completions',
      dataset: 'sharegpt',
      datasetPath: '/d/ShareGPT_V3.json',
      sharegptOutputLen: 64,
    });
    assert.equal(macroOptionsFromFlags({ 'range-ratio': '0.25' }).rangeRatio, 0.25);
    assert.equal(macroOptionsFromFlags({ 'random-range-ratio': '0.5' }).rangeRatio, 0.5);
    assert.equal(macroOptionsFromFlags({ 'prompts-file': '/p.jsonl' }).promptsFile, '/p.jsonl');
  });

  it("hands a workload the agent's table alone defines (trace replay) to the agent with its own flags, and no concurrency", () => {
    const options = macroOptionsFromFlags({ 'dataset-name': 'trace_replay', 'dataset-path': '/t/mooncake.jsonl', 'trace-speed': '2' });
    assert.deepEqual(options.workloadOptions, { traceSpeed: 2 });
    const args = macroAgentArgs(options, 'http://127.0.0.1:8000');
    const value = (flag: string) => args[args.indexOf(flag) + 1];
    assert.equal(value('--dataset-name'), 'trace_replay');
    assert.equal(value('--dataset-path'), '/t/mooncake.jsonl');
    assert.equal(value('--trace-speed'), '2');
    assert.ok(!args.includes('--concurrency'), 'a trace plays at its own pace');
    assert.ok(!args.includes('--trace-block-size'), "the agent's default applies");
    assert.equal(datasetText(options), 'replay of a timestamped trace from /t/mooncake.jsonl, trace speed 2');
    // Checked as the agent's row says, before anything runs.
    assert.throws(() => macroOptionsFromFlags({ 'dataset-name': 'trace_replay', 'trace-block-size': '0' }), /--trace-block-size takes a positive whole number/);
    assert.throws(() => macroAgentArgs({ dataset: 'trace_replay' }, 'http://h'), /needs its file's path on the host/);
    assert.throws(
      () => macroAgentArgs({ dataset: 'trace_replay', datasetPath: '/t', workloadOptions: { multiTurnTurns: 3 } }, 'http://h'),
      /multi turn turns is not an option|multi-turn-turns is not an option/,
    );
  });

  it('hands --stall-timeout to the agent, 0 (off) included', () => {
    const args = (flags: Record<string, string>) => macroAgentArgs(macroOptionsFromFlags(flags), 'http://127.0.0.1:8000');
    const stall = (a: string[]) => a[a.indexOf('--stall-timeout') + 1];
    assert.equal(stall(args({ 'stall-timeout': '15' })), '15');
    assert.equal(stall(args({ 'stall-timeout': '0' })), '0');
    assert.ok(!args({}).includes('--stall-timeout'), "the agent's own default applies");
  });

  it('hands prefix repetition, sampling, the extra body and headers to the agent as vllm bench serve names them', () => {
    const options = macroOptionsFromFlags({
      'dataset-name': 'prefix_repetition',
      'prefix-repetition-prefix-len': '64',
      'prefix-repetition-num-prefixes': '4',
      temperature: '0.6',
      'top-k': '40',
      'extra-body': '{"chat_template_kwargs":{"enable_thinking":false}}',
      header: ['x-tenant=bench', 'x-route=a=b'],
    });
    const args = macroAgentArgs(options, 'http://127.0.0.1:8000');
    const value = (flag: string) => args[args.indexOf(flag) + 1];
    assert.equal(value('--dataset-name'), 'prefix_repetition');
    assert.equal(value('--prefix-repetition-prefix-len'), '64');
    assert.equal(value('--prefix-repetition-num-prefixes'), '4');
    assert.ok(!args.includes('--prefix-repetition-suffix-len'), "the agent's default applies");
    assert.equal(value('--temperature'), '0.6');
    assert.equal(value('--top-k'), '40');
    assert.deepEqual(JSON.parse(value('--extra-body')), { chat_template_kwargs: { enable_thinking: false } });
    assert.deepEqual(
      args.flatMap((a, i) => (a === '--header' ? [args[i + 1]] : [])),
      ['x-tenant=bench', 'x-route=a=b'],
    );
    assert.match(
      datasetText(options),
      /4 groups sharing a prefix .*64 shared \+ 256 own tokens → 128 tokens; temperature 0\.6, top-k 40, extra body .*headers x-tenant, x-route$/,
    );
    assert.throws(() => macroAgentArgs({ dataset: 'prefix_repetition', rangeRatio: 0.2 }, 'http://h'), /range ratio applies to random prompts only/);
  });

  it('hands multi-turn conversations to the agent and names them in the findings', () => {
    const options = macroOptionsFromFlags({
      'dataset-name': 'multi_turn',
      'multi-turn-turns': '4',
      'multi-turn-conversations': '16',
      'input-len': '128',
      'output-len': '64',
    });
    const args = macroAgentArgs(options, 'http://127.0.0.1:8000');
    const value = (flag: string) => args[args.indexOf(flag) + 1];
    assert.deepEqual(['--dataset-name', '--multi-turn-turns', '--multi-turn-conversations', '--input-len', '--output-len'].map(value), [
      'multi_turn',
      '4',
      '16',
      '128',
      '64',
    ]);
    assert.equal(datasetText(options), 'multi-turn: 16 conversations × 4 turns, +128 tokens a turn → 64 output tokens, each turn sending the whole history');
    // With no count, the agent divides the level's requests by the turns (rounded up), and the findings say so.
    assert.match(datasetText({ dataset: 'multi_turn', requests: 30 }), /^multi-turn: 8 conversations × 4 turns, \+256 tokens a turn → 128 output tokens/);
    assert.match(
      datasetText({ dataset: 'multi_turn', multiTurn: { turns: 3 } }),
      /^multi-turn: conversations of 3 turns, max\(8, 4 × concurrency\) requests a level/,
    );
    assert.throws(() => macroAgentArgs({ dataset: 'multi_turn', requestRate: [2] }, 'http://h'), /run at concurrency levels, not request rates/);
    assert.throws(() => macroAgentArgs({ dataset: 'multi_turn', datasetPath: '/x.json' }, 'http://h'), /multi-turn conversations take no dataset file/);
    assert.throws(() => macroOptionsFromFlags({ 'multi-turn-turns': '0' }), /--multi-turn-turns/);
  });

  it('names the flag whose value is wrong', () => {
    const refused: [Record<string, string>, RegExp][] = [
      [{ 'dataset-name': 'sonnet' }, /--dataset-name must be one of random, (\w+, )*trace_replay(, \w+)*; got "sonnet"/],
      [{ api: 'responses' }, /--api must be one of completions, chat; got "responses"/],
      [{ 'extra-body': '{oops' }, /--extra-body is not JSON/],
      [{ 'extra-body': '[1, 2]' }, /--extra-body must be a JSON object/],
      [{ 'prefix-repetition-num-prefixes': '0' }, /--prefix-repetition-num-prefixes takes a positive whole number/],
      [{ 'sharegpt-output-len': '0' }, /--sharegpt-output-len takes a positive whole number/],
      [{ 'range-ratio': 'wide' }, /--range-ratio takes a non-negative number/],
      [{ 'random-range-ratio': '-1' }, /--random-range-ratio takes a non-negative number/],
      [{ 'stall-timeout': '-5' }, /--stall-timeout takes a non-negative number/],
    ];
    for (const [flags, message] of refused)
      assert.throws(
        () => macroOptionsFromFlags(flags),
        (e: unknown) => e instanceof UsageError && message.test(e.message),
        JSON.stringify(flags),
      );
  });
});
