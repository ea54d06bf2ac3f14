import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { checkOutPath, CliCommand, UsageError } from '../command';
import { kernelFamilyFlag } from '../flags';
import { writeAtomic } from '../../core/runs/runFolder';
import { analyzeTracesInWorker } from '../../core/trace/analyzeInWorker';
import { renderBreakdownText } from '../../core/trace/format';
import { printable } from '../../shared/printable';
import { renderNsysText } from '../../core/trace/nsysModules';
import { analyzeNsysReport, exportNsysAsKineto, nsysKind } from '../../core/trace/nsysSource';
import { KernelFamilySpec, TraceAnalysisOptions } from '../../core/trace/types';
import { compileUserPattern } from '../../core/trace/userPattern';

const usage = `Usage: infbench analyze FILE... [--out breakdown.json] [--json] [--family CATEGORY=REGEX]... [--step-annotation REGEX] [--top N]

Breaks the GPU time of each decode step down by kernel category, from torch.profiler (Kineto)
traces: one file per rank, plain JSON or gzip, any size. Needs no server.
An Nsight Systems report exported to SQLite (REPORT.sqlite, from nsys export --type sqlite) is
broken down by layer and module too, CUDA-graph replays included (needs python3 here).

  --out PATH              also write the breakdown as JSON
  --json                  print the JSON instead of tables
  --family CAT=REGEX      a kernel family tried before the built-in ones (repeatable),
                          e.g. --family 'all-reduce=my_custom_ar_kernel'
  --step-annotation RE    the name of the server's step annotation, if not a known one
                          (for an nsys report: the NVTX range of a step, default vLLM's step
                          annotations execute_new_N_cached_M, execute_context_N(T)_generation_M(T), and decode_step)
  --top N                 kernels listed per rank (default 15)`;

export interface AnalyzeArgs {
  files: string[];
  out?: string;
  json: boolean;
  options: TraceAnalysisOptions;
  /** What the user should know about the files given (one given twice), for stderr. */
  notes: string[];
}

export function parseAnalyzeArgs(argv: string[]): AnalyzeArgs {
  const files: string[] = [];
  const families: KernelFamilySpec[] = [];
  const options: TraceAnalysisOptions = {};
  let out: string | undefined;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value.\n\n${usage}`);
      return v;
    };
    if (a === '--out' || a === '-o') out = value();
    else if (a === '--json') json = true;
    else if (a === '--family') families.push(kernelFamilyFlag(value()));
    else if (a === '--step-annotation') options.stepAnnotation = value();
    else if (a === '--top') {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 1) throw new UsageError('--top takes a positive whole number.');
      options.topKernels = n;
    } else if (a.startsWith('-')) throw new UsageError(`unknown option ${a}.\n\n${usage}`);
    else files.push(a);
  }
  if (!files.length) throw new UsageError(`no trace file given.\n\n${usage}`);
  // The same file twice (by another path or a link too) would count as two ranks.
  const seen = new Map<string, string>();
  const unique: string[] = [];
  const notes: string[] = [];
  for (const f of files) {
    if (!existsSync(f)) throw new UsageError(`${f}: no such file.`);
    const st = statSync(f);
    if (st.isDirectory()) throw new UsageError(`${f} is a folder: give the trace files in it (for example ${f}/*.pt.trace.json.gz).`);
    const key = `${st.dev}:${st.ino}`;
    const first = seen.get(key);
    if (first !== undefined) {
      notes.push(`${f} is the same file as ${first}: analysed once, as one rank.`);
      continue;
    }
    seen.set(key, f);
    unique.push(f);
  }
  for (const f of families) userPattern(`--family ${f.category}=`, f.pattern);
  if (options.stepAnnotation !== undefined) userPattern('--step-annotation', options.stepAnnotation);
  if (out !== undefined) checkOutPath(out, 'drop --out and use --json');
  if (families.length) options.extraFamilies = families;
  return { files: unique.map((f) => resolve(f)), out, json, options, notes };
}

/** A user's pattern that is not valid, or could hang the analysis on a long name, refused before any file is read. */
function userPattern(flag: string, source: string): void {
  try {
    compileUserPattern(`The pattern of ${flag}`, source);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * Writes the breakdown to --out through a temporary file renamed over it, so that a full disk leaves
 * no empty or partial file (an earlier one stays as it was). Returns what went wrong, in words, or undefined.
 */
export function writeBreakdown(out: string, json: string, write: (path: string, text: string) => void = writeAtomic): string | undefined {
  try {
    write(out, `${json}\n`);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOSPC' || code === 'EDQUOT'
        ? `the disk that holds ${dirname(resolve(out))} is full (${code}). Free some space, or write elsewhere`
        : `${(err as Error).message}. Check the path, or write elsewhere`;
    return `could not write ${out}: ${why}. The breakdown printed above is complete; ${existsSync(out) ? `${out} was left as it was before` : `no ${out} was made`}.`;
  }
}

export const analyzeCommand: CliCommand = {
  name: 'analyze',
  summary: 'Break decode-step GPU time down by kernel category from torch.profiler traces (no server needed)',
  usage,
  async run(argv) {
    const args = parseAnalyzeArgs(argv);
    for (const note of args.notes) process.stderr.write(`infbench analyze: ${printable(note)}\n`);
    const started = Date.now();
    if (args.files.some((f) => nsysKind(f))) return analyzeNsys(args);
    let lastNote = 0;
    const breakdown = await analyzeTracesInWorker(args.files, args.options, {
      onProgress: (path, read, total) => {
        if (Date.now() - lastNote < 2000 || read >= total) return;
        lastNote = Date.now();
        process.stderr.write(`reading ${path}: ${((100 * read) / total).toFixed(0)}%\n`);
      },
    });
    const json = JSON.stringify(breakdown, null, 2);
    process.stdout.write(args.json ? `${json}\n` : renderBreakdownText(breakdown));
    const failed = args.out ? writeBreakdown(args.out, json) : undefined;
    const mb = breakdown.ranks.reduce((a, r) => a + r.totals.jsonBytes, 0) / 1e6;
    process.stderr.write(
      `analysed ${breakdown.ranks.length} file(s), ${mb.toFixed(1)} MB of JSON in ${((Date.now() - started) / 1000).toFixed(1)} s${args.out && !failed ? `; wrote ${args.out}` : ''}\n`,
    );
    if (failed) {
      process.stderr.write(`infbench analyze: ${failed}\n`);
      return 1;
    }
    return 0;
  },
};

/** Nsight Systems reports: each one read by the agent's reader (python3 here) into its layer and module breakdown. */
async function analyzeNsys(args: AnalyzeArgs): Promise<number> {
  const others = args.files.filter((f) => !nsysKind(f));
  if (others.length) throw new UsageError(`give Nsight Systems reports and torch.profiler traces in separate runs (${others[0]} is not a .sqlite report).`);
  const unexported = args.files.find((f) => nsysKind(f) === 'nsys-rep');
  if (unexported)
    throw new UsageError(
      `${unexported} is an Nsight Systems report not yet exported: run \`nsys export --type sqlite -o ${unexported.replace(/\.(nsys-rep|qdrep)$/i, '.sqlite')} ${unexported}\` where nsys is installed, then give the .sqlite file.`,
    );
  const results = [];
  for (const file of args.files) {
    const read = { stepRange: args.options.stepAnnotation, extraFamilies: args.options.extraFamilies };
    const b = await analyzeNsysReport(file, read);
    if (!args.json) process.stdout.write(renderNsysText(b, { categories: false }));
    // The same steps through the torch-profile analyzer, from the report written as Kineto traces.
    const folder = mkdtempSync(join(tmpdir(), 'infbench-nsys-'));
    try {
      const traces = await exportNsysAsKineto(file, folder, read);
      const kernels = await analyzeTracesInWorker(traces, { ...args.options, stepAnnotation: args.options.stepAnnotation ?? b.stepRange });
      if (!args.json) process.stdout.write(`\n${renderBreakdownText(kernels)}`);
      results.push({ ...b, kernelBreakdown: kernels });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }
  const json = JSON.stringify(results.length === 1 ? results[0] : results, null, 2);
  if (args.json) process.stdout.write(`${json}\n`);
  const failed = args.out ? writeBreakdown(args.out, json) : undefined;
  if (failed) {
    process.stderr.write(`infbench analyze: ${failed}\n`);
    return 1;
  }
  return 0;
}
