import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { renderBreakdownText } from '../../../src/core/trace/format';
import { RankBreakdown, TraceBreakdown } from '../../../src/core/trace/types';

// Real torch.profiler traces captured on an H200 in the shapes each server writes (see
// test/fixtures/traces/servers/README.md), checked against truth.json: a separate plain pass over
// the same JSON (truth.py) that maps kernels to their launch and launches to the step holding them.
const DIR = 'test/fixtures/traces/servers';
interface Group {
  steps: number;
  gpuUsPerStep?: number;
}
const TRUTH = JSON.parse(readFileSync(join(DIR, 'truth.json'), 'utf8')) as Record<
  string,
  { gpuEvents: number; prefill?: Group; decode?: Group; mixed?: Group }
>;

const filesOf = (folder: string) =>
  readdirSync(join(DIR, folder))
    .filter((f) => f.endsWith('.json.gz'))
    .sort()
    .map((f) => join(DIR, folder, f));
const truthOf = (file: string) => TRUTH[file.slice(DIR.length + 1)];
/** GPU time of the kernels in one decode step, as the analyzer counts it (overlap counted twice, as the truth does). */
const kernelUsPerStep = (g: RankBreakdown['decode']) => 1000 * g.categories.reduce((a, c) => a + c.rawMsPerStep, 0);

function assertNamedSteps(r: RankBreakdown): void {
  const t = truthOf(r.file);
  assert.equal(r.stepConfidence, 'exact', r.file);
  assert.equal(r.decode.count, t.decode!.steps, `${r.file}: decode steps`);
  assert.equal(r.prefill.count, t.prefill!.steps, `${r.file}: prefill steps`);
  assert.equal(r.mixed?.count ?? 0, t.mixed!.steps, `${r.file}: mixed steps`);
  const ours = kernelUsPerStep(r.decode);
  const truth = t.decode!.gpuUsPerStep!;
  assert.ok(Math.abs(ours - truth) <= 0.01 * truth, `${r.file}: ${ours.toFixed(1)} us of kernels per decode step vs ${truth} us`);
}

describe("decode steps on real traces in each server's shape (H200 captures)", function () {
  this.timeout(120_000);
  const both: [string, 'auto' | 'in-memory'][] = [
    ['streaming', 'auto'],
    ['in-memory', 'in-memory'],
  ];

  for (const [label, mode] of both) {
    describe(`read ${label}`, () => {
      let vllm: TraceBreakdown;
      before(async () => {
        vllm = await analyzeTraceFiles(filesOf('vllm-0.26-piecewise-tp2'), { mode });
      });

      it('counts vLLM 0.26+ steps by their execute_context_N(T)_generation_M(T) names, piecewise graphs and chunked prefill included', () => {
        assert.equal(vllm.ranks.length, 2);
        for (const r of vllm.ranks) {
          assert.equal(r.stepMethod, "vLLM's step annotation");
          assertNamedSteps(r);
        }
      });

      it("sets the API server's CPU-only trace apart: never a rank, no GPU name, not in the skew", () => {
        assert.deepEqual(
          vllm.ranks.map((r) => r.rank),
          [0, 1],
        );
        assert.equal(vllm.frontEnd?.length, 1);
        assert.match(vllm.frontEnd![0].file, /\.async_llm\./);
        assert.equal(vllm.skew?.stepMsByRank.length, 2);
      });

      it('names the slower rank (rank 1 runs one more GEMM per layer)', () => {
        const [r0, r1] = vllm.ranks;
        assert.ok(kernelUsPerStep(r1.decode) > 1.1 * kernelUsPerStep(r0.decode));
        assert.equal(vllm.skew?.busiestRank, 1);
        const text = renderBreakdownText(vllm);
        if (vllm.skew!.slowestRank !== 1) assert.match(text, /rank 1 does the most GPU work per step/);
      });

      it('says the step is bound by the CPU when the GPU idles through most of it', () => {
        const idle = vllm.overall.categories.find((c) => c.category === 'idle')!;
        assert.ok(idle.sharePct > 50);
        assert.match(
          vllm.headline,
          /^GPU idle \d+\.\d% of a [\d.]+ ms decode step: bound by the CPU and kernel launches \(\d+ kernels per step, launch call median [\d.]+ us\)/,
        );
        assert.match(vllm.headline, /steps from vLLM's step annotation\)$/);
      });

      it('counts SGLang steps by their step[EXTEND ...] / step[DECODE ...] names', async () => {
        const b = await analyzeTraceFiles(filesOf('sglang'), { mode });
        assert.equal(b.ranks[0].stepMethod, "SGLang's step annotation");
        assertNamedSteps(b.ranks[0]);
        // The headline's category and figure are the table's.
        const top = b.overall.categories.filter((c) => c.category !== 'idle')[0];
        if (!b.headline.startsWith('GPU idle')) assert.ok(b.headline.startsWith(`${top.category} ${top.sharePct.toFixed(1)}%`), b.headline);
      });

      it('finds the forward passes of traces with no step names, within one step, and says how', async () => {
        const b = await analyzeTraceFiles(filesOf('generate'), { mode });
        for (const r of b.ranks) {
          const t = truthOf(r.file);
          assert.ok(Math.abs(r.decode.count - t.decode!.steps) <= 1, `${r.file}: ${r.decode.count} decode steps vs ${t.decode!.steps}`);
          assert.ok(Math.abs(r.prefill.count - t.prefill!.steps) <= 1, `${r.file}: ${r.prefill.count} prefill steps vs ${t.prefill!.steps}`);
          assert.notEqual(r.stepConfidence, 'exact');
          assert.match(r.stepMethod ?? '', /no step names/);
        }
        const stack = b.ranks.find((r) => r.file.includes('generate_eager_stack'))!;
        assert.equal(stack.stepSource, 'module-forward');
        // The module forward holds exactly the truth's kernels (truth.py uses the same ranges).
        const t = truthOf(stack.file).decode!.gpuUsPerStep!;
        assert.ok(Math.abs(kernelUsPerStep(stack.decode) - t) <= 0.01 * t);
        assert.match(b.headline, /no step names/);
      });

      it('finds each pass of two generate calls in one trace (two prefills), not one step per call', async () => {
        // The real capture twice, the second shifted past the first in time and correlation id.
        const doc = JSON.parse(gunzipSync(readFileSync(join(DIR, 'generate', 'generate_eager.pt.trace.json.gz'))).toString('utf8')) as {
          traceEvents: Record<string, unknown>[];
        };
        // Shifted by the capture's own length (not its clock's reading), so that the second call follows the first.
        const timed = doc.traceEvents.filter((e) => typeof e.ts === 'number') as { ts: number; dur?: number }[];
        const span = Math.max(...timed.map((e) => e.ts + (e.dur ?? 0))) - Math.min(...timed.map((e) => e.ts)) + 1000;
        const second = doc.traceEvents.map((e) => {
          const args = e.args as Record<string, unknown> | undefined;
          return {
            ...e,
            ...(typeof e.ts === 'number' ? { ts: e.ts + span } : {}),
            ...(typeof args?.correlation === 'number' ? { args: { ...args, correlation: args.correlation + 10_000_000 } } : {}),
          };
        });
        const file = join(mkdtempSync(join(tmpdir(), 'ib-two-calls-')), 'two_generate_calls.json');
        writeFileSync(file, JSON.stringify({ ...doc, traceEvents: [...doc.traceEvents, ...second] }));
        const r = (await analyzeTraceFiles([file], { mode })).ranks[0];
        const t = TRUTH['generate/generate_eager.pt.trace.json.gz'];
        assert.equal(r.stepSource, 'repeating-pattern');
        assert.ok(Math.abs(r.decode.count - 2 * t.decode!.steps) <= 2, `${r.decode.count} decode steps vs ${2 * t.decode!.steps}`);
        assert.ok(Math.abs(r.prefill.count - 2) <= 1, `${r.prefill.count} prefill steps vs 2`);
      });
    });
  }
});
