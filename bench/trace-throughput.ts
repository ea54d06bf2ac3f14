// Trace analyzer throughput and memory on multi-GB traces.
//
//   npx tsx bench/trace-throughput.ts [--sizes 1,3] [--python-gb 0.5] [--format compact|indented]
//                                     [--steps named|unnamed|gpu-named|gpu-named-last] [--keep]
//                                     [--padding [--nul-gb 0.5]] [--ranks 8 [--rank-mb 135]]
//
// Builds plain-JSON Kineto traces of the given sizes (GB of uncompressed JSON) in a temporary
// folder by replicating the events of the real H200 fixture (test/fixtures/traces), each copy
// shifted in time and correlation id so that the steps stay distinct; then, for each size, runs the
// analyzer in a child process pinned to one core and prints MB/s of uncompressed JSON and the
// child's peak RSS. Beside it, Python's json.load over a file of --python-gb (the same events):
// json.load holds the whole document in memory, so it gets a size it can hold. Files are deleted
// at the end unless --keep. --format indented lays each event out over several lines as torch's
// own export_chrome_trace / tensorboard_trace_handler do; --steps unnamed replicates the H200
// generate-loop capture, whose steps no annotation names (cut from its repeating pass); --steps
// gpu-named replicates the vLLM capture with its CPU-side annotations dropped, so that only the
// GPU-side ones (gpu_user_annotation) name the steps; gpu-named-last writes those of every copy at
// the end of the file, as Kineto does for one capture. --padding adds, for each size, the files an
// unfinished writer leaves: the whole trace followed by --nul-gb of NULs (read, the NULs passed
// over), the trace cut inside traceEvents followed by as many NULs, and its first MB followed by a
// hole to 2 GiB (a sparse file: no disk used, read as NULs); both refused. And the trace's events
// shuffled (seeded; files under 0.4 GB). Each row gives the child's time and peak RSS, beside the plain trace's.
//
// --ranks N [--rank-mb 135]: the ranks of one capture instead. One trace of --rank-mb MB copied to N
// rank files in one folder (what a bounded capture of a TP-N server writes); one file alone on one
// core, then the N files through the worker pool (analyzeTracesInWorker: one worker per core, as
// many as free memory holds) and one after the other on one thread, each in a child of its own:
// wall time, MB/s, MB/s per core used, the child's peak RSS (all its threads), and whether the two
// breakdowns are equal. Beside them, Python's json.load of one file on one core and of the N files
// in N processes at once (their peak RSS added up). The pool needs the worker script beside this
// one: bundled, `npx esbuild src/core/trace/worker.ts --bundle --platform=node
// --outfile=<dir>/traceWorker.js` next to the bench's bundle (under tsx each worker compiles the
// TypeScript sources first, which its start-up then counts).
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { analyzeTraceFile, analyzeTraceFiles } from '../src/core/trace/analyze';
import { analyzeTracesInWorker, poolSize } from '../src/core/trace/analyzeInWorker';

// Run from the repository root.
const FIXTURE =
  arg('steps', 'named') === 'unnamed'
    ? resolve('test', 'fixtures', 'traces', 'servers', 'generate', 'generate_eager.pt.trace.json.gz')
    : resolve('test', 'fixtures', 'traces', 'llama_eager_decode.pt.trace.json.gz');
const INDENTED = arg('format', 'compact') === 'indented';
const GPU_NAMED = arg('steps', 'named').startsWith('gpu-named');
/** --steps gpu-named-last: every copy's GPU-side annotations at the end of the file, as Kineto writes one long capture. */
const GPU_NAMES_LAST = arg('steps', 'named') === 'gpu-named-last';

/** One event laid out as torch writes it: a few keys per line, ts/dur on their own, args one per line. */
function torchLayout(e: Record<string, unknown>): string {
  const { ts, dur, args, ...head } = e;
  const kv = (o: Record<string, unknown>) => Object.entries(o).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const lines = [`  {`, `    ${kv(head).join(', ')}${ts !== undefined || args ? ',' : ''}`];
  if (ts !== undefined) lines.push(`    ${kv(dur !== undefined ? { ts, dur } : { ts }).join(', ')}${args ? ',' : ''}`);
  if (args) lines.push(`    "args": {`, `      ${kv(args as Record<string, unknown>).join(',\n      ')}`, `    }`);
  lines.push(`  }`);
  return lines.join('\n');
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

interface Template {
  parts: string[];
  ts: number;
  corr: number;
  /** A gpu_user_annotation (written after every copy's other events with GPU_NAMES_LAST). */
  gpuAnnotation: boolean;
}

/** Splits each event's JSON around its ts and correlation id, so that copies cost two number prints. */
function templates(): { head: string; events: Template[]; spanUs: number } {
  const doc = JSON.parse(gunzipSync(readFileSync(FIXTURE)).toString('utf8')) as { traceEvents: Record<string, unknown>[] } & Record<string, unknown>;
  const { traceEvents: all, ...rest } = doc;
  const traceEvents = GPU_NAMED ? all.filter((e) => e.cat !== 'user_annotation') : all;
  let lo = Infinity;
  let hi = -Infinity;
  const events: Template[] = traceEvents.map((e) => {
    const ts = typeof e.ts === 'number' ? e.ts : 0;
    const args = e.args as Record<string, unknown> | undefined;
    const corr = typeof args?.correlation === 'number' ? args.correlation : -1;
    if (typeof e.ts === 'number') {
      lo = Math.min(lo, ts);
      hi = Math.max(hi, ts + (typeof e.dur === 'number' ? e.dur : 0));
    }
    const copy = { ...e, ...(typeof e.ts === 'number' ? { ts: '@TS@' } : {}), ...(corr >= 0 ? { args: { ...args, correlation: '@CORR@' } } : {}) };
    const parts = (INDENTED ? torchLayout(copy) : JSON.stringify(copy)).split(/"@TS@"|"@CORR@"/);
    return { parts, ts, corr, gpuAnnotation: e.cat === 'gpu_user_annotation' };
  });
  return { head: JSON.stringify(rest).slice(0, -1), events, spanUs: hi - lo };
}

/** Writes a trace of about `bytes` bytes; returns its exact size. */
function build(path: string, bytes: number, t: ReturnType<typeof templates>): number {
  const fd = openSync(path, 'w');
  let written = 0;
  const write = (s: string) => {
    written += writeSync(fd, s);
  };
  write(`${t.head},"traceEvents":[\n`);
  let buffer: string[] = [];
  let pending = 0;
  let first = true;
  let copies = 0;
  const emit = (copy: number, gpuAnnotations: boolean | undefined) => {
    const shift = copy * (t.spanUs + 1000);
    const corrShift = copy * 1_000_000;
    for (const e of t.events) {
      if (gpuAnnotations !== undefined && e.gpuAnnotation !== gpuAnnotations) continue;
      const p = e.parts;
      const ts = (e.ts + shift).toFixed(3);
      const s = p.length === 3 ? `${p[0]}${ts}${p[1]}${e.corr + corrShift}${p[2]}` : p.length === 2 ? `${p[0]}${ts}${p[1]}` : p[0];
      const line = first ? s : `,\n${s}`;
      first = false;
      buffer.push(line);
      pending += line.length;
      if (pending > 32 << 20) {
        write(buffer.join(''));
        buffer = [];
        pending = 0;
      }
    }
  };
  for (; written + pending < bytes; copies++) emit(copies, GPU_NAMES_LAST ? false : undefined);
  if (GPU_NAMES_LAST) for (let copy = 0; copy < copies; copy++) emit(copy, true);
  write(buffer.join(''));
  write('\n],"traceName":"bench"}\n');
  closeSync(fd);
  return statSync(path).size;
}

// The analysis itself runs in a child (this same script with `child PATH`) pinned to one core: its
// wall time, CPU time and its own peak RSS.

/**
 * This process's peak RSS in kB: VmHWM, which exec starts afresh. getrusage's maxRSS of a child
 * counts the parent's resident memory at the fork too (Linux keeps the larger of the two across
 * exec), which a parent holding a trace in memory makes the larger.
 */
function peakRssKb(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]);
  } catch {
    // not Linux: getrusage
  }
  return process.resourceUsage().maxRSS;
}
async function child(path: string): Promise<void> {
  let peakHeap = 0;
  const sampler = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 20);
  const t0 = process.hrtime.bigint();
  let r: Awaited<ReturnType<typeof analyzeTraceFile>>;
  try {
    r = await analyzeTraceFile(path, 0);
  } catch (err) {
    // A refusal (TraceFormatError) is a figure too: how soon, and in how much memory.
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    clearInterval(sampler);
    console.log(JSON.stringify({ seconds, maxRssKb: peakRssKb(), peakHeapMb: peakHeap / 1e6, refused: String(err) }));
    return;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  clearInterval(sampler);
  const cpu = process.cpuUsage();
  // What the analysis still holds once garbage is gone: the live data, as opposed to heap the GC kept.
  (globalThis as { gc?: () => void }).gc?.();
  const liveHeapMb = process.memoryUsage().heapUsed / 1e6;
  console.log(
    JSON.stringify({
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      maxRssKb: peakRssKb(),
      peakHeapMb: peakHeap / 1e6,
      liveHeapMb,
      analysis: r.analysis,
      source: r.stepSource,
      kernels: r.totals.kernels,
      events: r.totals.events,
      decode: r.decode.count,
      jsonBytes: r.totals.jsonBytes,
    }),
  );
}

/** The ranks of one capture (`ranks pool|serial FILE...`): the whole process's wall time and peak RSS, and a digest of the breakdown. */
async function ranksChild(how: string, files: string[]): Promise<void> {
  const t0 = process.hrtime.bigint();
  const b = how === 'pool' ? await analyzeTracesInWorker(files) : await analyzeTraceFiles(files);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const digest = createHash('sha1').update(JSON.stringify(b)).digest('hex').slice(0, 12);
  const workers = how === 'pool' ? poolSize(files.length) : 1;
  console.log(JSON.stringify({ seconds, maxRssKb: peakRssKb(), digest, workers, decode: b.ranks.map((r) => r.decode.count) }));
}

// One core: taskset where the host has it.
const pin = spawnSync('taskset', ['-c', '0', 'true']).status === 0 ? ['taskset', '-c', '0'] : ['env'];

interface ChildFigures {
  /** Set when the analyzer refused the file: its message. */
  refused?: string;
  seconds: number;
  cpuSeconds: number;
  maxRssKb: number;
  peakHeapMb: number;
  liveHeapMb: number;
  analysis: string;
  source: string;
  kernels: number;
  events: number;
  decode: number;
  jsonBytes: number;
}

function analyze(path: string): ChildFigures {
  // Under tsx the script is TypeScript; bundled (see docs/BENCHMARKS.md) it is plain JavaScript.
  const loader = __filename.endsWith('.ts') ? ['--require', 'tsx/cjs'] : [];
  const out = execFileSync(pin[0], [...pin.slice(1), process.execPath, '--expose-gc', ...loader, __filename, 'child', path], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out.trim().split('\n').pop()!);
}

function pythonLoad(path: string): { seconds: number; maxRssKb: number } | string {
  const code =
    'import json,sys,time,resource\nt=time.perf_counter()\nd=json.load(open(sys.argv[1]))\ns=time.perf_counter()-t\nprint(json.dumps({"seconds":s,"maxRssKb":resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"events":len(d["traceEvents"])}))';
  const r = spawnSync(pin[0], [...pin.slice(1), 'python3', '-c', code, path], { encoding: 'utf8' });
  if (r.status !== 0) return `python3 json.load failed (${r.signal ?? r.status}): ${r.stderr.trim().split('\n').pop()}`;
  return JSON.parse(r.stdout.trim());
}

/** Adds the case of `plain`'s events shuffled (seeded). */
function shuffledCase(plain: string, cases: [string, string][]): void {
  const text = readFileSync(plain, 'latin1');
  const open = text.indexOf('[\n') + 2;
  const close = text.lastIndexOf('\n]');
  const lines = text.slice(open, close).split(',\n');
  let seed = 1;
  for (let i = lines.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [lines[i], lines[j]] = [lines[j], lines[i]];
  }
  const shuffled = plain.replace(/\.json$/, '-shuffled.json');
  writeFileSync(shuffled, `${text.slice(0, open)}${lines.join(',\n')}${text.slice(close)}`, 'latin1');
  cases.push(['the same events shuffled', shuffled]);
}

/** Python's json.load of `files` in as many processes at once: the wall time and their peak RSS added up. */
function pythonLoadAll(files: string[]): { seconds: number; maxRssKb: number } | string {
  const code =
    'import json,sys,time,resource\nfrom concurrent.futures import ProcessPoolExecutor\ndef load(p):\n    json.load(open(p))\n    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\nif __name__ == "__main__":\n    t=time.perf_counter()\n    with ProcessPoolExecutor(len(sys.argv)-1) as ex:\n        rss=sum(ex.map(load, sys.argv[1:]))\n    print(json.dumps({"seconds":time.perf_counter()-t,"maxRssKb":rss}))';
  const r = spawnSync('python3', ['-c', code, ...files], { encoding: 'utf8' });
  if (r.status !== 0) return `python3 json.load failed (${r.signal ?? r.status}): ${r.stderr.trim().split('\n').pop()}`;
  return JSON.parse(r.stdout.trim());
}

/** --ranks: one capture's rank files, one alone on one core, then all of them through the pool and one after the other. */
function ranksBench(dir: string, t: ReturnType<typeof templates>): void {
  const n = Number(arg('ranks', '8'));
  const mb = Number(arg('rank-mb', '135'));
  const folder = join(dir, `capture-${n}-ranks`);
  mkdirSync(folder);
  const one = join(folder, 'rank0.pt.trace.json');
  // Whole copies of the capture, as many as come nearest to --rank-mb (one copy's size measured first).
  const empty = build(one, 0, t);
  const copyBytes = build(one, empty + 1, t) - empty;
  const bytes = build(one, mb * 1e6 - copyBytes / 2, t);
  const files = [one];
  for (let r = 1; r < n; r++) {
    files.push(join(folder, `rank${r}.pt.trace.json`));
    copyFileSync(one, files[r]);
  }
  const total = (bytes * n) / 1e6;
  const a = analyze(one);
  console.log(
    `one rank alone, one core      ${(bytes / 1e6).toFixed(0).padStart(5)} MB  ${a.seconds.toFixed(3).padStart(6)} s  ${(bytes / 1e6 / a.seconds).toFixed(0).padStart(5)} MB/s  peak RSS ${(a.maxRssKb / 1024).toFixed(0).padStart(5)} MB  (${a.decode} decode steps, ${a.analysis})`,
  );
  const loader = __filename.endsWith('.ts') ? ['--require', 'tsx/cjs'] : [];
  const digests: string[] = [];
  for (const how of ['pool', 'serial']) {
    const out = execFileSync(process.execPath, [...loader, __filename, 'ranks', how, ...files], { encoding: 'utf8', maxBuffer: 1 << 20 });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { seconds: number; maxRssKb: number; digest: string; workers: number };
    digests.push(r.digest);
    const perCore = total / r.seconds / r.workers;
    console.log(
      `${n} ranks, ${how === 'pool' ? `${r.workers} workers`.padEnd(10) : 'one thread'}     ${total.toFixed(0).padStart(5)} MB  ${r.seconds.toFixed(3).padStart(6)} s  ${(total / r.seconds).toFixed(0).padStart(5)} MB/s (${perCore.toFixed(0)} MB/s per core)  peak RSS ${(r.maxRssKb / 1024).toFixed(0).padStart(5)} MB  breakdown ${r.digest}`,
    );
  }
  console.log(`pool and one thread give ${digests[0] === digests[1] ? 'the same breakdown' : 'DIFFERENT breakdowns'}`);
  const p1 = pythonLoad(one);
  console.log(
    typeof p1 === 'string'
      ? p1
      : `json.load, one rank, one core ${(bytes / 1e6).toFixed(0).padStart(5)} MB  ${p1.seconds.toFixed(3).padStart(6)} s  ${(bytes / 1e6 / p1.seconds).toFixed(0).padStart(5)} MB/s  peak RSS ${(p1.maxRssKb / 1024).toFixed(0).padStart(5)} MB  (parse only)`,
  );
  const pn = pythonLoadAll(files);
  console.log(
    typeof pn === 'string'
      ? pn
      : `json.load, ${n} ranks, ${n} processes ${total.toFixed(0).padStart(5)} MB  ${pn.seconds.toFixed(3).padStart(6)} s  ${(total / pn.seconds).toFixed(0).padStart(5)} MB/s  peak RSS ${(pn.maxRssKb / 1024).toFixed(0).padStart(5)} MB (added up; parse only)`,
  );
}

function main(): void {
  const sizes = arg('sizes', '1,3').split(',').map(Number);
  const pythonGb = Number(arg('python-gb', '0.5'));
  const dir = mkdtempSync(join(tmpdir(), 'ib-trace-bench-'));
  const cpu = execFileSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], { encoding: 'utf8' }).trim();
  console.log(`${INDENTED ? 'indented (torch layout)' : 'compact'} JSON from ${FIXTURE.split('/').slice(-2).join('/')}`);
  console.log(
    `CPU: ${cpu}; ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores; node ${process.version}; python ${execFileSync('python3', ['-c', 'import platform; print(platform.python_version())'], { encoding: 'utf8' }).trim()}; ${pin[0] === 'taskset' ? 'analyzer and python pinned to one core (taskset -c 0)' : 'no taskset: not pinned'}`,
  );
  try {
    const t = templates();
    if (process.argv.includes('--ranks')) {
      console.log(`${availableParallelism()} cores available to the pool`);
      ranksBench(dir, t);
      return;
    }
    const rows: string[] = [];
    /** The plain trace of `gb`, then the files an unfinished writer leaves of it (see the head of this file). */
    const padded = (gb: number) => {
      const plain = join(dir, `bench-${gb}GB.json`);
      const bytes = build(plain, gb * 1e9, t);
      const nulBytes = Number(arg('nul-gb', '0.5')) * 1e9;
      const zeros = Buffer.alloc(16 << 20);
      const appendNuls = (path: string, n: number) => {
        const fd = openSync(path, 'a');
        for (let left = n; left > 0; left -= zeros.length) writeSync(fd, zeros, 0, Math.min(left, zeros.length));
        closeSync(fd);
      };
      const cases: [string, string][] = [['plain trace', plain]];
      // The same events in another order (seeded): read again keeping every kernel, in time order
      // (order.ts). Shuffled in memory, as one string: up to 0.4 GB.
      if (bytes < 4e8) shuffledCase(plain, cases);
      const whole = join(dir, 'whole-then-nuls.json');
      copyFileSync(plain, whole);
      appendNuls(whole, nulBytes);
      cases.push([`whole trace + ${(nulBytes / 1e9).toFixed(2)} GB of NULs`, whole]);
      const cut = join(dir, 'cut-then-nuls.json');
      copyFileSync(plain, cut);
      // Cut inside an event, half-way through traceEvents: what a writer that died leaves.
      const cutFd = openSync(cut, 'r+');
      ftruncateSync(cutFd, Math.floor(bytes / 2) + 17);
      closeSync(cutFd);
      appendNuls(cut, nulBytes);
      cases.push([`trace cut at ${(bytes / 2e6).toFixed(0)} MB + ${(nulBytes / 1e9).toFixed(2)} GB of NULs`, cut]);
      const sparse = join(dir, 'sparse.json');
      copyFileSync(plain, sparse);
      const sparseFd = openSync(sparse, 'r+');
      ftruncateSync(sparseFd, 1 << 20);
      ftruncateSync(sparseFd, 2 ** 31);
      closeSync(sparseFd);
      cases.push(['sparse: 1 MB of the trace, then a hole to 2 GiB', sparse]);
      for (const [what, path] of cases) {
        const a = analyze(path);
        const size = statSync(path).size;
        rows.push(
          `${what.padEnd(48)} ${(size / 1e9).toFixed(2).padStart(5)} GB  ${a.seconds.toFixed(2).padStart(6)} s  peak RSS ${(a.maxRssKb / 1024).toFixed(0).padStart(5)} MB  ${a.refused ? `refused: ${a.refused.slice(0, 160)}` : `${a.kernels} kernels, ${a.decode} decode steps (${a.analysis})`}`,
        );
        console.log(rows.at(-1));
      }
      if (!process.argv.includes('--keep')) for (const [, path] of cases) rmSync(path);
    };
    const run = (gb: number, withPython: boolean) => {
      const path = join(dir, `bench-${gb}GB-${INDENTED ? 'indented' : 'compact'}.json`);
      const g0 = Date.now();
      const bytes = build(path, gb * 1e9, t);
      const genS = (Date.now() - g0) / 1000;
      const a = analyze(path);
      const mb = bytes / 1e6;
      rows.push(
        `analyzer   ${(bytes / 1e9).toFixed(2).padStart(6)} GB  ${(mb / a.seconds).toFixed(0).padStart(5)} MB/s  ${a.seconds.toFixed(1).padStart(6)} s (CPU ${a.cpuSeconds.toFixed(1)} s)  peak RSS ${(a.maxRssKb / 1024).toFixed(0).padStart(5)} MB (heap: peak ${a.peakHeapMb.toFixed(0)} MB, live after GC ${a.liveHeapMb.toFixed(0)} MB; ${a.analysis}, steps from ${a.source})  ${a.events} events, ${a.kernels} kernels, ${a.decode} decode steps (built in ${genS.toFixed(1)} s)`,
      );
      console.log(rows.at(-1));
      if (withPython) {
        const p = pythonLoad(path);
        rows.push(
          typeof p === 'string'
            ? p
            : `json.load  ${(bytes / 1e9).toFixed(2).padStart(6)} GB  ${(mb / p.seconds).toFixed(0).padStart(5)} MB/s  ${p.seconds.toFixed(1).padStart(6)} s  peak RSS ${(p.maxRssKb / 1024).toFixed(0).padStart(5)} MB  (parse only, no analysis)`,
        );
        console.log(rows.at(-1));
      }
      if (!process.argv.includes('--keep')) rmSync(path);
    };
    if (!process.argv.includes('--padding')) run(pythonGb, true);
    for (const gb of sizes) {
      if (!process.argv.includes('--padding')) run(gb, false);
      else padded(gb);
    }
  } finally {
    if (!process.argv.includes('--keep')) rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') void child(process.argv[3]);
else if (process.argv[2] === 'ranks') void ranksChild(process.argv[3], process.argv.slice(4));
else main();
