import * as assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/command';
import { macroOptionsFromFlags } from '../../../src/cli/commands/macro';
import { macroAgentArgs } from '../../../src/core/macro/options';

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

  it('names the flag whose value is wrong', () => {
    const refused: [Record<string, string>, RegExp][] = [
      [{ 'dataset-name': 'sonnet' }, /--dataset-name takes random, jsonl or sharegpt; got "sonnet"/],
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
