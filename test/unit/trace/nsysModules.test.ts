import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { IDLE, NO_RANGE, NsysBreakdown, placeOf, renderNsysText } from '../../../src/core/trace/nsysModules';
import { analyzeNsysReport, exportNsysAsKineto, nsysKind } from '../../../src/core/trace/nsysSource';
import { analyzeCommand, parseAnalyzeArgs } from '../../../src/cli/commands/analyze';
import { UsageError } from '../../../src/cli/command';

// Real exports of bench/nsys_serving_loop.py on an H200 (test/fixtures/nsys/README.md). The reader is
// the agent's Python (python3 -m infbench_agent.profile.nsys_report), run as the CLI runs it.
const FIXTURES = join(__dirname, '..', '..', 'fixtures', 'nsys');
const fixture = (name: string) => join(FIXTURES, name);
const stepLog = (name: string) => JSON.parse(readFileSync(fixture(`${name}.steps.json`), 'utf8')) as { steps: { gpuMs: number }[]; meanStepMs: number };

describe('module paths of the layerwise NVTX ranges', () => {
  it('names the layer and the kind of module of vLLM and SGLang paths', () => {
    assert.deepEqual(placeOf('model.layers.2.self_attn.o_proj'), { layer: 2, block: 'self_attn', type: 'attention' });
    assert.deepEqual(placeOf('model.layers.0.mlp.down_proj'), { layer: 0, block: 'mlp', type: 'mlp' });
    // Qwen3-MoE and DeepSeek name the sparse block `mlp`: its router and experts are MoE, not a dense MLP.
    assert.deepEqual(placeOf('model.layers.5.mlp.experts'), { layer: 5, block: 'mlp', type: 'moe' });
    assert.deepEqual(placeOf('model.layers.5.mlp.gate'), { layer: 5, block: 'mlp', type: 'moe' });
    assert.equal(placeOf('model.layers.5.mlp.gate_up_proj').type, 'mlp');
    assert.equal(placeOf('model.layers.1.self_attn.all_reduce').type, 'all-reduce');
    assert.equal(placeOf('model.layers.1.input_layernorm').type, 'norm');
    assert.deepEqual(placeOf('model.layers.3'), { layer: 3, block: '(layer)', type: 'layer (between blocks)' });
    assert.deepEqual(placeOf('model.embed_tokens'), { layer: null, block: 'embed_tokens', type: 'embedding' });
    assert.equal(placeOf('lm_head').type, 'lm head');
    assert.equal(placeOf('sampler').type, 'sampling');
    assert.equal(placeOf('model.layers.10.block_sparse_moe.experts.w2').layer, 10);
  });

  it('tells an Nsight Systems report from a trace by its name', () => {
    assert.equal(nsysKind('run/report.sqlite'), 'sqlite');
    assert.equal(nsysKind('run/report.nsys-rep'), 'nsys-rep');
    assert.equal(nsysKind('rank0.pt.trace.json.gz'), undefined);
  });
});

describe('an Nsight Systems decode step by layer and module (H200 fixtures)', function () {
  // Each report is read by a python3 child process.
  this.timeout(60000);
  let graphs: NsysBreakdown;
  let eager: NsysBreakdown;
  before(async () => {
    graphs = await analyzeNsysReport(fixture('graphs.sqlite'));
    eager = await analyzeNsysReport(fixture('eager.sqlite'));
  });

  it("finds the loop's 40 steps, and a step's time agrees with its own CUDA-event log", () => {
    const r = graphs.ranks[0];
    assert.equal(graphs.ranks.length, 1);
    assert.equal(r.deviceName, 'NVIDIA H200');
    assert.equal(r.steps, stepLog('graphs').steps.length);
    // The events bracket the step; the kernels' span is inside it (within 1% when replayed).
    const truth = stepLog('graphs').meanStepMs;
    assert.ok(r.stepMs!.mean <= truth && r.stepMs!.mean >= truth * 0.99, `${r.stepMs!.mean} ms against ${truth} ms`);
    assert.ok(r.replayedPct > 95, `${r.replayedPct}% replayed`);
  });

  it('breaks the replayed step down into the same layers and modules as the eager run', () => {
    const g = graphs.ranks[0];
    const e = eager.ranks[0];
    assert.deepEqual(
      g.layers.map((l) => [l.layer, l.kernelsPerStep]),
      e.layers.map((l) => [l.layer, l.kernelsPerStep]),
    );
    for (const m of e.modules) {
      if (m.module === IDLE) continue;
      // Timed where a kernel averages 2 us or more: the residual adds (1.4 us) and the stand-in
      // all-reduce (1.1 us) replay 5.0% and 5.1% slower than they run eagerly (measured on these
      // fixtures); their counts are held equal here and their layers' time below.
      const timed = m.msPerStep / m.kernelsPerStep >= 0.002;
      const same = g.modules.find((x) => x.module === m.module);
      assert.ok(same, `${m.module} in the graph run`);
      assert.equal(same.kernelsPerStep, m.kernelsPerStep, m.module);
      if (timed) assert.ok(Math.abs(same.msPerStep / m.msPerStep - 1) < 0.05, `${m.module}: ${same.msPerStep} ms against ${m.msPerStep} ms eager`);
    }
    for (const l of e.layers) {
      const same = g.layers.find((x) => x.layer === l.layer)!;
      assert.ok(Math.abs(same.msPerStep / l.msPerStep - 1) < 0.05, `layer ${l.layer}: ${same.msPerStep} ms against ${l.msPerStep} ms eager`);
    }
  });

  it('names layer 2 as the slow attention layer (its KV cache is four times as long) and finds MoE only in layers 1-3', () => {
    const r = graphs.ranks[0];
    const attention = r.skew.find((s) => s.module === 'attention')!;
    assert.equal(attention.slowestLayer, 2);
    assert.equal(attention.layers, 4);
    assert.ok(attention.slowestOverMeanPct > 50);
    assert.deepEqual(
      r.layers.filter((l) => l.modules.some((m) => m.module === 'moe')).map((l) => l.layer),
      [1, 2, 3],
    );
    assert.deepEqual(
      r.layers.filter((l) => l.modules.some((m) => m.module === 'mlp')).map((l) => l.layer),
      [0],
    );
    // Four attention and four MLP/MoE all-reduces, one each.
    assert.equal(r.modules.find((m) => m.module === 'all-reduce')!.kernelsPerStep, 8);
    assert.match(graphs.headline, /^The attention blocks take \d+\.\d% of a decode step .*layer 2's attention/);
  });

  it('adds up to the step: modules, the copy outside every range and the idle time', () => {
    const r = graphs.ranks[0];
    const total = r.modules.reduce((a, m) => a + m.sharePct, 0);
    assert.ok(Math.abs(total - 100) < 0.5, `${total}%`);
    assert.equal(r.modules.find((m) => m.module === NO_RANGE)!.kernelsPerStep, 1);
  });

  it('agrees with the torch profile of the same loop on the kernel categories (within 3 points of the step)', async () => {
    const torch = await analyzeTraceFiles([fixture('torch.pt.trace.json.gz')], { stepAnnotation: 'decode_step' });
    const kineto = torch.overall.categories;
    const r = graphs.ranks[0];
    assert.equal(torch.overall.count, r.steps);
    for (const c of r.categories) {
      const k = kineto.find((x) => x.category === c.category);
      assert.ok(k, `${c.category} in the torch profile`);
      assert.ok(Math.abs(k.sharePct - c.sharePct) < 3, `${c.category}: ${c.sharePct}% nsys, ${k.sharePct}% torch`);
      assert.equal(k.kernelsPerStep, c.kernelsPerStep, c.category);
    }
  });

  it('reads as a torch profile does once written as Kineto traces: the same steps, categories within 3 points of the torch profile', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'nsys-kineto-'));
    try {
      const files = await exportNsysAsKineto(fixture('graphs.sqlite'), folder);
      assert.equal(files.length, 1, 'one process, one trace');
      const fromNsys = await analyzeTraceFiles(files, { stepAnnotation: graphs.stepRange });
      const torch = await analyzeTraceFiles([fixture('torch.pt.trace.json.gz')], { stepAnnotation: 'decode_step' });
      assert.equal(fromNsys.overall.count, 40);
      assert.equal(fromNsys.ranks[0].stepSource, 'annotation');
      assert.equal(fromNsys.ranks[0].launch!.graphLaunches, 43, '3 warm-up and 40 decode replays');
      for (const c of torch.overall.categories) {
        const n = fromNsys.overall.categories.find((x) => x.category === c.category);
        assert.ok(n, c.category);
        assert.ok(Math.abs(n.sharePct - c.sharePct) < 3, `${c.category}: ${n.sharePct}% from nsys, ${c.sharePct}% torch`);
        assert.equal(n.kernelsPerStep, c.kernelsPerStep, c.category);
      }
    } finally {
      rmSync(folder, { recursive: true });
    }
  });

  it('says so when the server had no layerwise NVTX markers, rather than guessing modules', async () => {
    const b = await analyzeNsysReport(fixture('graphs-no-nvtx.sqlite'));
    const r = b.ranks[0];
    assert.deepEqual(
      r.modules.map((m) => m.module),
      [NO_RANGE, IDLE],
    );
    assert.deepEqual(r.layers, []);
    assert.match(b.headline, /No kernel of the 40 decode steps ran inside an NVTX module range/);
    assert.match(renderNsysText(b), /\(no NVTX range\)/);
  });

  it("keeps only the steps between the server's cudaProfilerStart and cudaProfilerStop, recorded from the start", async () => {
    // The loop called them around steps 10-29, as /start_profile and /stop_profile do with vLLM's CUDA profiler mode.
    const b = await analyzeNsysReport(fixture('window.sqlite'));
    const r = b.ranks[0];
    assert.equal(r.steps, 20);
    const log = stepLog('window').steps.slice(10, 30);
    const truth = log.reduce((a, s) => a + s.gpuMs, 0) / log.length;
    assert.ok(r.stepMs!.mean <= truth && r.stepMs!.mean >= truth * 0.99, `${r.stepMs!.mean} ms against ${truth} ms`);
    assert.equal(r.modules.find((m) => m.module === NO_RANGE)!.kernelsPerStep, 1, 'only the step copy is outside a module');
    assert.deepEqual(b.warnings, []);
  });

  it("warns that a capture bounded by --capture-range=cudaProfilerApi lost the graph capture's ranges", async () => {
    const b = await analyzeNsysReport(fixture('capture-range.sqlite'));
    const r = b.ranks[0];
    assert.equal(r.steps, 20);
    // Replayed kernels unattributed (counted, not guessed); the eager sampler still named.
    assert.ok(r.modules.find((m) => m.module === NO_RANGE)!.sharePct > 80);
    assert.equal(r.modules.find((m) => m.module === 'sampling')!.kernelsPerStep, 1);
    assert.equal(b.warnings.length, 1);
    assert.match(b.warnings[0], /--capture-range=cudaProfilerApi drops them; record from the server's start/);
  });

  it('prints the module, layer, skew and category tables', () => {
    const text = renderNsysText(graphs);
    for (const head of ['module', 'layer 2', 'slowest over mean', 'kernel category']) assert.ok(text.includes(head), head);
    assert.ok(!renderNsysText(graphs, { categories: false }).includes('kernel category'));
  });
});

describe('infbench analyze with an Nsight Systems report', function () {
  this.timeout(60000);

  /** Runs the command with stdout captured (the CLI writes there; nothing else in the test does). */
  async function analyze(argv: string[]): Promise<{ code: number; out: string }> {
    const chunks: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => {
      chunks.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      const code = await analyzeCommand.run(argv);
      return { code, out: chunks.join('') };
    } finally {
      process.stdout.write = write;
    }
  }

  it('prints the finding, the module table and the slow layer for a .sqlite report', async () => {
    const { code, out } = await analyze([fixture('graphs.sqlite')]);
    assert.equal(code, 0);
    assert.match(out, /^The attention blocks take/);
    assert.match(out, /^moe +\d+\.\d{3} +\d+\.\d +39\.0$/m);
    assert.match(out, /^attention +4 +layer 2 /m);
    // The categories of the same steps, from the torch-profile analyzer reading the report as Kineto traces.
    assert.match(out, /^gemm 68\.\d% \(0\.55\d ms\) of a 0\.81\d ms decode step \(1 rank, 40 decode steps/m);
  });

  it('gives the JSON with --json', async () => {
    const { out } = await analyze([fixture('graphs.sqlite'), '--json']);
    const b = JSON.parse(out) as NsysBreakdown & { kernelBreakdown: { overall: { count: number } } };
    assert.equal(b.ranks[0].steps, 40);
    assert.equal(b.kernelBreakdown.overall.count, 40);
    assert.equal(b.stepSource, 'nvtx-range');
  });

  it('asks for the export of a report nsys has not exported, with the command', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nsys-rep-'));
    const rep = join(dir, 'report.nsys-rep');
    writeFileSync(rep, 'not exported');
    await assert.rejects(
      analyze([rep]),
      (err: Error) => err instanceof UsageError && err.message.includes(`nsys export --type sqlite -o ${join(dir, 'report.sqlite')} ${rep}`),
    );
    await assert.rejects(
      analyze([fixture('graphs.sqlite'), fixture('torch.pt.trace.json.gz')]),
      (err: Error) => err instanceof UsageError && /separate runs/.test(err.message),
    );
    rmSync(dir, { recursive: true });
  });

  it('takes a .sqlite report as a file to analyse', () => {
    const args = parseAnalyzeArgs([fixture('graphs.sqlite'), '--step-annotation', '^decode_step$']);
    assert.equal(args.files.length, 1);
    assert.equal(args.options.stepAnnotation, '^decode_step$');
  });
});
