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

  it('names the flag whose value is wrong', () => {
    const refused: [Record<string, string>, RegExp][] = [
      [{ 'dataset-name': 'sonnet' }, /--dataset-name takes random, jsonl, sharegpt or prefix_repetition; got "sonnet"/],
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
