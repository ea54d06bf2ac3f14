import * as assert from 'node:assert/strict';
import { datasetText, lengthRange, macroAgentArgs, MacroOptionsError } from '../../../src/core/macro/options';
import { levelTable } from '../../../src/core/macro/tables';
import { MacroLevelSummary } from '../../../src/shared/results';

const URL = 'http://127.0.0.1:8000';
const after = (args: string[], flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);

describe("macro datasets and length ranges in the agent's arguments", () => {
  it('hands a range ratio to the agent for random prompts, and says the lengths it spans', () => {
    const args = macroAgentArgs({ inputLen: 256, outputLen: 128, rangeRatio: 0.25 }, URL);
    assert.equal(after(args, '--range-ratio'), '0.25');
    assert.equal(args.includes('--dataset-path'), false);
    // The agent's bounds (macro/prompts.py length_range): vLLM's floor and ceil around the length.
    assert.deepEqual(lengthRange(256, 0.25), [192, 320]);
    assert.deepEqual(lengthRange(100, 0.33), [67, 133]);
    assert.equal(
      datasetText({ inputLen: 256, outputLen: 128, rangeRatio: 0.25 }),
      'random prompts, 256 → 128 tokens, each ±25% (192–320 → 96–160, range ratio 0.25)',
    );
    assert.equal(datasetText({}), 'random prompts, 256 → 128 tokens');
    assert.equal(macroAgentArgs({ rangeRatio: 0 }, URL).includes('--range-ratio'), false);
  });

  it('names a ShareGPT file and its output length as vllm bench serve does, and keeps --prompts-file for JSONL', () => {
    const args = macroAgentArgs({ dataset: 'sharegpt', datasetPath: '/data/ShareGPT_V3.json', sharegptOutputLen: 64 }, URL);
    assert.equal(after(args, '--dataset-name'), 'sharegpt');
    assert.equal(after(args, '--dataset-path'), '/data/ShareGPT_V3.json');
    assert.equal(after(args, '--sharegpt-output-len'), '64');
    assert.equal(
      datasetText({ dataset: 'sharegpt', datasetPath: '/d.json' }),
      "ShareGPT conversations from /d.json, each with its second turn's output length",
    );
    const jsonl = macroAgentArgs({ promptsFile: '/p.jsonl' }, URL);
    assert.equal(after(jsonl, '--prompts-file'), '/p.jsonl');
    assert.equal(jsonl.includes('--dataset-name'), false);
    // A file alone: its kind is the agent's to tell.
    assert.deepEqual(macroAgentArgs({ datasetPath: '/x.json' }, URL).slice(-2), ['--dataset-path', '/x.json']);
  });

  it('refuses combinations that mean nothing, naming what to change, before anything runs', () => {
    const refused: [Parameters<typeof macroAgentArgs>[0], RegExp][] = [
      [{ rangeRatio: 1 }, /range ratio must be at least 0 and below 1/],
      [{ rangeRatio: -0.1 }, /range ratio must be at least 0 and below 1/],
      [{ promptsFile: '/p.jsonl', rangeRatio: 0.2 }, /random prompts only/],
      [{ dataset: 'sharegpt' }, /needs its file's path/],
      [{ dataset: 'random', datasetPath: '/x.json' }, /take no dataset file/],
      [{ sharegptOutputLen: 8 }, /sharegpt dataset only/],
      [{ dataset: 'sharegpt', datasetPath: '/x.json', sharegptOutputLen: 0 }, /whole number of tokens, at least 1/],
      [{ promptsFile: '/p.jsonl', dataset: 'sharegpt' }, /not a sharegpt dataset/],
    ];
    for (const [options, message] of refused)
      assert.throws(
        () => macroAgentArgs(options, URL),
        (e: unknown) => e instanceof MacroOptionsError && message.test(e.message),
        JSON.stringify(options),
      );
  });
});

describe('the macro table with lengths that vary per request', () => {
  const level = (extra: Record<string, unknown>): MacroLevelSummary => ({
    max_concurrency: 4,
    request_rate: null,
    completed: 10,
    failed: 0,
    duration: 5,
    total_input_tokens: 2513,
    total_output_tokens: 1280,
    request_throughput: 2,
    output_throughput: 256,
    total_token_throughput: 758,
    ...extra,
  });

  it('gives each level its mean prompt and output tokens for a range or a dataset, and no such columns for fixed lengths', () => {
    for (const extra of [
      { dataset_name: 'random', range_ratio: 0.25 },
      { dataset_name: 'sharegpt', range_ratio: null },
    ]) {
      const table = levelTable([level(extra)]);
      const keys = table.columns.map((c) => c.key);
      assert.ok(keys.includes('mean_input_tokens') && keys.includes('mean_output_tokens'), JSON.stringify(extra));
      assert.equal(table.rows[0].mean_input_tokens, 251.3);
      assert.equal(table.rows[0].mean_output_tokens, 128);
    }
    assert.equal(
      levelTable([level({ dataset_name: 'random', range_ratio: 0 })]).columns.some((c) => c.key === 'mean_input_tokens'),
      false,
    );
    // Results from before the agent said its dataset read as they did.
    assert.equal(
      levelTable([level({})]).columns.some((c) => c.key === 'mean_input_tokens'),
      false,
    );
  });
});
