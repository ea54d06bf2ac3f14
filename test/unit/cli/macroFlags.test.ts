import * as assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/command';
import { macroOptionsFromFlags } from '../../../src/cli/commands/macro';

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

  it('names the flag whose value is wrong', () => {
    const refused: [Record<string, string>, RegExp][] = [
      [{ 'dataset-name': 'sonnet' }, /--dataset-name takes random, jsonl or sharegpt; got "sonnet"/],
      [{ 'sharegpt-output-len': '0' }, /--sharegpt-output-len takes a positive whole number/],
      [{ 'range-ratio': 'wide' }, /--range-ratio takes a non-negative number/],
      [{ 'random-range-ratio': '-1' }, /--random-range-ratio takes a non-negative number/],
    ];
    for (const [flags, message] of refused)
      assert.throws(
        () => macroOptionsFromFlags(flags),
        (e: unknown) => e instanceof UsageError && message.test(e.message),
        JSON.stringify(flags),
      );
  });
});
