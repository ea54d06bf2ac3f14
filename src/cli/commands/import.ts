import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliCommand, UsageError } from '../command';
import { importVllmBench, ImportError, ImportedMacroResult } from '../../core/compare/vllmBench';
import { renderTextTable } from '../../shared/table';

const USAGE = `infbench import-vllm — a \`vllm bench serve --save-result\` JSON as a macro run, to set beside ours

Usage: infbench import-vllm FILE.json [options]

Creates a completed macro run folder under .inference-bench/runs/ with one level per result in the
file (an --append-result file holds one per line). Field names are vLLM's, as in our macro results,
so \`infbench compare\` and the results view treat it like any macro run. A file saved with
--save-detailed also brings each request (its send time, TTFT, latency and tokens): the results view
draws them on the run's timeline, and its Export Chrome Trace saves them for Perfetto.

  --workspace DIR   where runs are kept (default: current folder)
  --json            print the new run's result as JSON

Example: vllm bench serve --model M --max-concurrency 1 --save-result --result-filename c1.json
         infbench import-vllm c1.json && infbench compare <our macro run> <the imported run>`;

export const importCommand: CliCommand = {
  name: 'import-vllm',
  summary: 'import a vllm bench serve result JSON as a macro run',
  usage: USAGE,
  async run(argv) {
    let parsed: { values: { workspace?: string; json?: boolean }; positionals: string[] };
    try {
      parsed = parseArgs({ args: argv, options: { workspace: { type: 'string' }, json: { type: 'boolean' } }, allowPositionals: true });
    } catch (err) {
      throw new UsageError(`${(err as Error).message}\n\n${USAGE}`);
    }
    if (parsed.positionals.length !== 1) throw new UsageError(`import-vllm takes one file; got ${parsed.positionals.length}.\n\n${USAGE}`);
    const workspace = resolve(parsed.values.workspace ?? '.');
    let run;
    try {
      run = importVllmBench(workspace, resolve(parsed.positionals[0]));
    } catch (err) {
      if (err instanceof ImportError) throw new UsageError(err.message);
      throw err;
    }
    const result = run.readResult<ImportedMacroResult>()!;
    if (parsed.values.json) {
      process.stdout.write(`${JSON.stringify({ run: run.info, result }, null, 2)}\n`);
      return 0;
    }
    const table = renderTextTable({
      id: 'imported',
      title: `Imported ${result.file} (${result.model ?? 'model not named'}${run.info.simulated ? ', simulator' : ''}) as ${run.info.id}`,
      columns: [
        { key: 'c', label: 'concurrency', digits: 0 },
        { key: 'completed', label: 'completed', digits: 0 },
        { key: 'thr', label: 'output tok/s', digits: 1 },
        { key: 'tpot', label: 'median TPOT ms', digits: 2 },
        { key: 'ttft', label: 'median TTFT ms', digits: 1 },
      ],
      rows: result.levels.map((l) => ({
        c: l.max_concurrency ?? '∞',
        completed: l.completed,
        thr: l.output_throughput,
        tpot: l.median_tpot_ms as number,
        ttft: l.median_ttft_ms as number,
      })),
    });
    const requests = result.requests
      ? `${result.requests} requests with their send times: the results view draws them on the run's timeline.`
      : "No per-request lists in the file (saved without --save-detailed): the levels are imported; for the run's timeline, run vllm bench serve with --save-result --save-detailed.";
    process.stdout.write(`${table}\n\n${requests}\nRun folder: ${run.dir}\n`);
    return 0;
  },
};
