import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { RunningSimulator, startSimulator } from '../../../src/core/macro/simulator';
import type { RunSummary } from '../../../src/shared/results';
import { closeAllEditors } from '../helpers';

function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'simulator', 'vllm_sim.py'))) return dir;
  throw new Error(`no repository (a folder with simulator/vllm_sim.py) above ${from}`);
}
const TARGET = 'sim-custom';
const FIRST = `Run Macro Phase on ${TARGET}`;

describe("Run Macro Phase's Custom workload", function () {
  this.timeout(120_000);
  let sim: RunningSimulator;

  before(async () => {
    // The simulator is found from the working directory; the extension host's is not the repository.
    const cwd = process.cwd();
    process.chdir(findRepoRoot(__dirname));
    const starting = startSimulator({ stepBaseMs: 2, stepPerSeqMs: 0.02, prefillPerTokenMs: 0.001 });
    process.chdir(cwd);
    sim = await starting;
    await vscode.workspace
      .getConfiguration('inferenceBench')
      .update('targets', [{ name: TARGET, kind: 'local', serverUrl: sim.url, python: 'python3' }], vscode.ConfigurationTarget.Workspace);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('inferenceBench').update('targets', undefined, vscode.ConfigurationTarget.Workspace);
    await sim?.stop();
    await closeAllEditors();
  });

  /**
   * Runs Run Macro Phase through its Custom workload, answering each prompt by its title ("Run Macro Phase on
   * sim-custom: sampling") as a user reads it; the quick input itself is the workbench's and is not under test.
   * Returns the questions asked, in order, and the run.
   */
  async function custom(dataset: string, typed: Record<string, string>): Promise<{ asked: string[]; run?: RunSummary }> {
    const picks: Record<string, string> = { [FIRST]: 'Custom…', load: 'Concurrency levels', dataset };
    const asked: string[] = [];
    const step = (title: string | undefined) => (title === FIRST ? FIRST : (title ?? '').slice(FIRST.length + 2));
    const window = vscode.window as { showInputBox: typeof vscode.window.showInputBox; showQuickPick: typeof vscode.window.showQuickPick };
    const { showInputBox, showQuickPick } = window;
    window.showQuickPick = (async (items: readonly vscode.QuickPickItem[] | Thenable<readonly vscode.QuickPickItem[]>, options?: vscode.QuickPickOptions) => {
      asked.push(step(options?.title));
      return (await items).find((i) => i.label === picks[step(options?.title)]);
    }) as unknown as typeof vscode.window.showQuickPick;
    window.showInputBox = async (options) => {
      asked.push(step(options?.title));
      const answer = typed[step(options?.title)];
      assert.ok(answer !== undefined && !options?.validateInput?.(answer), `"${options?.title}" got no valid answer`);
      return answer;
    };
    try {
      return { asked, run: await vscode.commands.executeCommand<RunSummary | undefined>('inferenceBench.runMacro', TARGET) };
    } finally {
      window.showInputBox = showInputBox;
      window.showQuickPick = showQuickPick;
    }
  }

  it("asks only the chosen dataset's questions, then runs multi-turn conversations with the sampling given", async () => {
    const { asked, run } = await custom('Multi-turn conversations', {
      'concurrency levels': '2',
      'requests per level': '',
      conversations: '3, 4',
      'tokens a turn': '24, 6',
      sampling: 'temperature=0.5 top-k=20',
      'goodput SLOs': '',
    });
    assert.deepEqual(asked, [
      FIRST,
      'load',
      'concurrency levels',
      'requests per level',
      'dataset',
      'conversations',
      'tokens a turn',
      'sampling',
      'goodput SLOs',
    ]);
    assert.equal(run?.status, 'completed', run?.reason);
    const [level] = run.macro!.levels;
    assert.deepEqual([level.dataset_name, level.turns, level.conversations, level.input_len, level.completed], ['multi_turn', 3, 4, 24, 12]);
    assert.deepEqual(level.request_extras, { temperature: 0.5, top_k: 20 });
  });

  it("replays a timestamped trace at twice its pace, its own options asked from the agent's table and no lengths", async () => {
    const folder = mkdtempSync(join(tmpdir(), 'infbench-trace-'));
    const trace = join(folder, 'mooncake.jsonl');
    // Six requests over 0.5 s as recorded (10 req/s), two sharing their first block.
    const rows = [0, 100, 200, 300, 400, 500].map((ms, i) => ({ timestamp: 1000 + ms, input_length: 24, output_length: 3, hash_ids: [i % 2 ? 7 : i, 9 + i] }));
    writeFileSync(trace, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    try {
      const { asked, run } = await custom('Replay of a timestamped trace', {
        'concurrency levels': '1',
        'requests per level': '',
        'replay of a timestamped trace: file': trace,
        'replay of a timestamped trace: trace speed': '2',
        'replay of a timestamped trace: trace block size': '',
        sampling: '',
        'goodput SLOs': '',
      });
      assert.deepEqual(asked, [
        FIRST,
        'load',
        'concurrency levels',
        'requests per level',
        'dataset',
        'replay of a timestamped trace: file',
        'replay of a timestamped trace: trace speed',
        'replay of a timestamped trace: trace block size',
        'sampling',
        'goodput SLOs',
      ]);
      assert.equal(run?.status, 'completed', run?.reason);
      const [level] = run.macro!.levels;
      assert.deepEqual([level.dataset_name, level.completed, level.total_input_tokens], ['trace_replay', 6, 6 * 24]);
      assert.ok(Math.abs((level.request_rate ?? 0) - 20) < 1e-6, `twice the recorded 10 req/s, got ${level.request_rate}`);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('runs prefix repetition with the prefix, suffix and groups typed, asking only for the output length besides', async () => {
    const { asked, run } = await custom('Prefix repetition', {
      'concurrency levels': '1',
      'requests per level': '6',
      'shared prefixes': '32, 16, 3',
      'output tokens': '4',
      sampling: '',
      'goodput SLOs': '',
    });
    assert.deepEqual(asked, [
      FIRST,
      'load',
      'concurrency levels',
      'requests per level',
      'dataset',
      'shared prefixes',
      'output tokens',
      'sampling',
      'goodput SLOs',
    ]);
    assert.equal(run?.status, 'completed', run?.reason);
    const [level] = run.macro!.levels;
    assert.deepEqual([level.dataset_name, level.prefix_len, level.suffix_len, level.num_prefixes, level.completed], ['prefix_repetition', 32, 16, 3, 6]);
    assert.equal(level.request_extras, undefined, 'empty sampling: greedy, as vllm bench serve');
  });
});
