import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentResult } from './agentLog';
import { buildBudget } from '../../../src/core/explain/budget';
import { explainRuns, selectRuns } from '../../../src/core/explain/campaign';
import { budgetFindings } from '../../../src/core/explain/findings';
import { microInputFrom, profileInputFrom } from '../../../src/core/explain/inputs';
import { servedConfigFrom } from '../../../src/core/explain/servedModel';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { RunFolder } from '../../../src/core/runs/runFolder';
import { environmentTable, probeSummaryLines } from '../../../src/core/probe/tables';
import { ProbeResult } from '../../../src/remote/agentProtocol';

// The served model's config.json as the probe reports it (agent probe/served_model.py, test_served_model.py),
// set against real H200 captures: micro's Kimi-K2.5 TP 8 run and the continuous-batching loop's trace.
const FIXTURES = join(__dirname, '..', '..', 'fixtures');

/** A probe result whose server was started with `tp` GPUs and whose config.json summary is `config`. */
function probeResult(config: Record<string, unknown>, tp: number, id = String(config.model)) {
  return {
    host: 'h200',
    server: {
      url: 'http://127.0.0.1:8000',
      kind: 'vllm',
      models: [{ id, root: config.model }],
      parallel: { tp, pp: 1, dp: 1, dp_attention: false, ranks: tp },
      model_config: { path: '/hf/hub/models--x/snapshots/abc/config.json', found_by: "the server's --model, in the Hugging Face cache", ...config },
    },
  };
}

const KIMI = {
  model: 'moonshotai/Kimi-K2.5',
  model_type: 'kimi_k2',
  nested: 'text_config',
  outer_model_type: 'kimi_k25',
  num_hidden_layers: 61,
  hidden_size: 7168,
  num_attention_heads: 64,
  experts: 384,
  experts_field: 'n_routed_experts',
  num_experts_per_tok: 8,
};
const QWEN3_30B = {
  model: 'Qwen/Qwen3-30B-A3B',
  model_type: 'qwen3_moe',
  num_hidden_layers: 48,
  hidden_size: 2048,
  experts: 128,
  experts_field: 'num_experts',
  num_experts_per_tok: 8,
};
// test/fixtures/traces/serving/capture_serving.py: 3 layers, hidden 1024, 8 heads, 4 experts, top-2, one GPU.
const LOOP = { model: 'loop', model_type: 'loop_moe', num_hidden_layers: 3, hidden_size: 1024, num_attention_heads: 8, experts: 4, num_experts_per_tok: 2 };
const kimiMicro = () => microInputFrom('kimi-micro', agentResult(join(FIXTURES, 'explain', 'micro-kimi-tp8-h200.jsonl')));
const loopTrace = async () =>
  profileInputFrom('loop-trace', await analyzeTraceFiles([join(FIXTURES, 'traces', 'serving', 'graph_names.pt.trace.json.gz')]), { concurrency: 8 })!;

describe('the budget checks micro, the trace and the served config.json against each other', () => {
  it("predicts from micro's Kimi-K2.5 TP 8 run when the served config is Kimi-K2.5 at TP 8, and says so", () => {
    const served = servedConfigFrom('probe-1', probeResult(KIMI, 8))!;
    const b = buildBudget({ micro: kimiMicro(), served });
    assert.ok(b.rows.find((r) => r.key === 'moe_gemm')!.predicted_ms! > 0);
    assert.ok(!b.caveats.some((c) => /not the one served/.test(c)));
    assert.equal(
      b.modelLine,
      "Model: kimi-k2.5 at TP 8, 61 layers, 384 experts, 8 active, from micro run kimi-micro; it agrees with the served config.json (moonshotai/Kimi-K2.5 (kimi_k2 under text_config, 61 layers, hidden 7168, 384 experts, 8 active, TP 8), read by probe run probe-1 from the server's --model, in the Hugging Face cache).",
    );
    assert.ok(budgetFindings(b).lines.includes(b.modelLine!));
  });

  it('refuses to predict from micro when the server served another model, naming each figure that disagrees', () => {
    const b = buildBudget({ micro: kimiMicro(), served: servedConfigFrom('probe-2', probeResult(QWEN3_30B, 4))! });
    assert.ok(b.rows.every((r) => r.predicted_ms === undefined));
    assert.equal(b.predicted_ms, undefined);
    const why = b.caveats.find((c) => /not the one served/.test(c))!;
    assert.match(
      why,
      /^No prediction from micro run kimi-micro: its model \(kimi-k2\.5 at TP 8, 61 layers, 384 experts, 8 active\) is not the one served, Qwen\/Qwen3-30B-A3B/,
    );
    assert.match(
      why,
      /layers: served 48, micro's model 61; hidden size: served 2048, micro's model 7168; routed experts: served 128, micro's model 384; tensor parallelism: served TP 4, micro's model TP 8\./,
    );
    assert.match(why, /Measure the served model: `infbench micro --model Qwen\/Qwen3-30B-A3B --tp 4 --m 1`\.$/);
    assert.match(b.modelLine!, /disagrees with what was served or profiled/);
  });

  it('a dense served model against MoE micro shapes: refused, said as MoE or dense', () => {
    const dense = { model: 'Qwen/Qwen3-8B', model_type: 'qwen3', num_hidden_layers: 61, hidden_size: 7168 };
    const b = buildBudget({ micro: kimiMicro(), served: servedConfigFrom('probe-3', probeResult(dense, 8))! });
    assert.ok(b.rows.every((r) => r.predicted_ms === undefined));
    assert.match(b.caveats.join('\n'), /the served model is dense, micro's model MoE \(384 experts\)/);
  });

  it('keeps the served config that agrees with the real trace, and leaves out one the trace contradicts', async () => {
    const profile = await loopTrace();
    const agrees = buildBudget({ profile, served: servedConfigFrom('probe-loop', probeResult(LOOP, 1))! });
    assert.equal(agrees.served?.model, 'loop');
    assert.deepEqual(agrees.caveats, []);
    // No micro run: the command that fills it in measures the served model, by the id the probe read.
    assert.equal(agrees.missing.find((m) => m.phase === 'micro')?.command, 'infbench micro --model loop --tp 1 --m 8');
    assert.match(agrees.modelLine!, /^Served model: loop \(loop_moe, 3 layers, hidden 1024, 4 experts, 2 active, TP 1\), read by probe run probe-loop/);

    const other = buildBudget({ profile, served: servedConfigFrom('probe-kimi', probeResult(KIMI, 8))! });
    assert.equal(other.served, undefined);
    const why = other.caveats.join('\n');
    assert.match(why, /The served config\.json the probe read, moonshotai\/Kimi-K2\.5 .* is not the model profiled/);
    assert.match(why, /the trace runs 3 attention kernels per step, where the served 61 layers run one to a few each/);
    assert.match(why, /the trace runs no all-reduce, where the server's TP 8 all-reduces every layer/);
    assert.equal(other.modelLine, undefined);
  });

  it("the probe's own report says the served structure and where its config.json was found", () => {
    const r = {
      ...probeResult(KIMI, 8),
      platform: 'linux',
      python: { version: '3.12', executable: 'python3', implementation: 'CPython' },
      packages: {},
      cuda_visible_devices: null,
      gpus: { available: false, error: 'no GPUs', devices: [], processes: [], topology: null },
    };
    const server = {
      ...r.server,
      reachable: true,
      healthy: true,
      error: null,
      kind_evidence: null,
      simulated: false,
      version: '0.13.0',
      profiler: { enabled: null, evidence: null },
      pid: null,
      command_line: null,
    };
    const result = { ...r, server } as unknown as ProbeResult;
    const text =
      "kimi_k2 (under text_config): 61 layers, hidden 7168, 64 heads, 384 experts, 8 per token — /hf/hub/models--x/snapshots/abc/config.json, found by the server's --model, in the Hugging Face cache";
    assert.ok(probeSummaryLines(result).includes(`  model structure: ${text}`));
    assert.deepEqual(
      environmentTable(result).rows.find((row) => row.what === 'Model structure'),
      { what: 'Model structure', value: text },
    );
  });

  it('a probe result without a config summary (config not on the host) adds nothing', () => {
    assert.equal(servedConfigFrom('p', { server: { models: [], parallel: null } }), undefined);
    assert.equal(servedConfigFrom('p', { server: { model_config: { path: '/x' } } }), undefined);
  });
});

describe('explain finds the probe of the profiled server and reads the served config from it', () => {
  const at = (w: string, phase: 'probe' | 'micro', when: string, result: unknown, options: Record<string, unknown>) => {
    const r = RunFolder.create(w, phase, 'gpu-box', options, new Date(when));
    r.writeResult(result);
    r.finish('completed');
    return r;
  };

  it('uses the newest probe of the same target and URL that saw the model, not a probe of another server', () => {
    const w = mkdtempSync(join(tmpdir(), 'ib-served-'));
    const url = 'http://127.0.0.1:8000';
    // The profile run the budget is anchored on: the Kimi step of the simulator-shaped result, batch 1.
    const profile = RunFolder.create(w, 'profile', 'gpu-box', { url, concurrency: 1 }, new Date('2026-12-01T12:00:00Z'));
    profile.writeResult({ server: { model: 'moonshotai/Kimi-K2.5' }, ranks: [{ rank: 0, step_us: 20_000, by_category: { gemm: 16_000, idle: 4_000 } }] });
    profile.finish('completed');
    at(w, 'micro', '2026-12-01T11:00:00Z', agentResult(join(FIXTURES, 'explain', 'micro-kimi-tp8-h200.jsonl')), {});
    const right = at(w, 'probe', '2026-12-01T10:00:00Z', probeResult(KIMI, 8), { url });
    at(w, 'probe', '2026-12-01T10:30:00Z', probeResult(QWEN3_30B, 4), { url: 'http://127.0.0.1:9000' });
    at(w, 'probe', '2026-12-01T10:40:00Z', probeResult(QWEN3_30B, 4), { url });
    const chosen = selectRuns(w);
    assert.equal(chosen.probe?.info.id, right.info.id);
    const b = explainRuns(chosen);
    assert.match(b.modelLine!, new RegExp(`agrees with the served config\\.json \\(moonshotai/Kimi-K2\\.5 .*read by probe run ${right.info.id}`));
    assert.ok(b.rows.find((r) => r.key === 'gemm')!.predicted_ms! > 0);
  });
});
