import { existsSync, statSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CliCommand, UsageError } from '../command';
import { kernelFamilyFlag } from '../flags';
import { analyzeTracesInWorker } from '../../core/trace/analyzeInWorker';
import { renderBreakdownText } from '../../core/trace/format';
import { KernelFamilySpec, TraceAnalysisOptions } from '../../core/trace/types';

const usage = `Usage: infbench analyze FILE... [--out breakdown.json] [--json] [--family CATEGORY=REGEX]... [--step-annotation REGEX] [--top N]

Breaks the GPU time of each decode step down by kernel category, from torch.profiler (Kineto)
traces: one file per rank, plain JSON or gzip, any size. Needs no server.

  --out PATH              also write the breakdown as JSON
  --json                  print the JSON instead of tables
  --family CAT=REGEX      a kernel family tried before the built-in ones (repeatable),
                          e.g. --family 'all-reduce=my_custom_ar_kernel'
  --step-annotation RE    the name of the server's step annotation, if not a known one
  --top N                 kernels listed per rank (default 15)`;

export interface AnalyzeArgs {
  files: string[];
  out?: string;
  json: boolean;
  options: TraceAnalysisOptions;
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
  for (const f of files) {
    if (!existsSync(f)) throw new UsageError(`${f}: no such file.`);
    if (statSync(f).isDirectory()) throw new UsageError(`${f} is a folder: give the trace files in it (for example ${f}/*.pt.trace.json.gz).`);
  }
  if (families.length) options.extraFamilies = families;
  return { files: files.map((f) => resolve(f)), out, json, options };
}

export const analyzeCommand: CliCommand = {
  name: 'analyze',
  summary: 'Break decode-step GPU time down by kernel category from torch.profiler traces (no server needed)',
  usage,
  async run(argv) {
    const args = parseAnalyzeArgs(argv);
    const started = Date.now();
    let lastNote = 0;
    const breakdown = await analyzeTracesInWorker(args.files, args.options, {
      onProgress: (path, read, total) => {
        if (Date.now() - lastNote < 2000 || read >= total) return;
        lastNote = Date.now();
        process.stderr.write(`reading ${path}: ${((100 * read) / total).toFixed(0)}%\n`);
      },
    });
    const json = JSON.stringify(breakdown, null, 2);
    if (args.out) writeFileSync(args.out, `${json}\n`);
    process.stdout.write(args.json ? `${json}\n` : renderBreakdownText(breakdown));
    const mb = breakdown.ranks.reduce((a, r) => a + r.totals.jsonBytes, 0) / 1e6;
    process.stderr.write(
      `analysed ${breakdown.ranks.length} file(s), ${mb.toFixed(1)} MB of JSON in ${((Date.now() - started) / 1000).toFixed(1)} s${args.out ? `; wrote ${args.out}` : ''}\n`,
    );
    return 0;
  },
};
