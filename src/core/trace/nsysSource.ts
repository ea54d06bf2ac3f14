// An Nsight Systems report as a trace source: the agent's reader (Python's own sqlite3, nothing
// installed) runs over the SQLite export and streams one JSON record per line, which this folds
// into the module breakdown as it arrives. On a remote host the agent runs the same module there.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { NsysBreakdown, NsysModuleAnalyzer, NsysRecord } from './nsysModules';
import { KernelFamilySpec } from './types';

export interface NsysReadOptions {
  /** The NVTX range text that marks a decode step (a regular expression); the reader's default otherwise. */
  stepRange?: string;
  extraFamilies?: KernelFamilySpec[];
  /** The Python to run the reader with (default: python3). */
  python?: string;
  signal?: AbortSignal;
}

/** Where the agent's package is: the zip beside a bundle, else this checkout's agent/ folder, else dist/. */
export function agentPythonPath(): string {
  const candidates = [join(__dirname, 'agent.pyz'), resolve(__dirname, '..', '..', '..', 'agent'), resolve(__dirname, '..', '..', '..', 'dist', 'agent.pyz')];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`The agent's Python package was not found (looked for ${candidates.join(', ')}). Run \`npm run build\` to make dist/agent.pyz.`);
  return found;
}

/** Says whether a file name is an Nsight Systems report, exported (.sqlite) or not (.nsys-rep). */
export function nsysKind(path: string): 'sqlite' | 'nsys-rep' | undefined {
  if (/\.(sqlite|sqlite3|db)$/i.test(path)) return 'sqlite';
  if (/\.(nsys-rep|qdrep)$/i.test(path)) return 'nsys-rep';
  return undefined;
}

/** Streams the reader's records of one SQLite export to `onRecord`. Rejects with the reader's own message when it fails. */
export function readNsysReport(path: string, onRecord: (r: NsysRecord) => void, options: NsysReadOptions = {}): Promise<void> {
  return runReader(path, [], (line) => onRecord(JSON.parse(line) as NsysRecord), options);
}

/**
 * Writes the report as Kineto traces (one per process) into `folder`, for the torch-profile analyzer
 * (analyze.ts) to read as it reads any trace: the same steps' categories, top kernels and launches.
 * Resolves to the files written.
 */
export async function exportNsysAsKineto(path: string, folder: string, options: NsysReadOptions = {}): Promise<string[]> {
  const files: string[] = [];
  await runReader(path, ['--kineto', folder], (line) => files.push(line), options);
  return files;
}

function runReader(path: string, extra: string[], onLine: (line: string) => void, options: NsysReadOptions): Promise<void> {
  const args = ['-m', 'infbench_agent.profile.nsys_report', path, ...extra];
  if (options.stepRange !== undefined) args.push('--step-range', options.stepRange);
  const python = options.python ?? 'python3';
  const child = spawn(python, args, {
    env: { ...process.env, PYTHONPATH: agentPythonPath(), PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
    signal: options.signal,
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    if (stderr.length < 8192) stderr += d;
  });
  let parseError: Error | undefined;
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (parseError || !line) return;
    try {
      onLine(line);
    } catch (err) {
      parseError = err as Error;
      child.kill();
    }
  });
  return new Promise((resolvePromise, reject) => {
    child.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code;
      reject(
        code === 'ENOENT'
          ? new Error(
              `${python} was not found: the Nsight Systems reader needs Python 3.8 or newer (standard library only). Install it, or say which Python to use.`,
            )
          : err,
      );
    });
    child.on('close', (code) => {
      lines.close();
      if (parseError) reject(new Error(`The Nsight Systems reader wrote a line that is not JSON (${parseError.message}).`));
      else if (code === 0) resolvePromise();
      else
        reject(new Error(stderr.trim().replace(/^nsys_report: /, '') || `The Nsight Systems reader (${python} ${args.join(' ')}) exited with code ${code}.`));
    });
  });
}

/** Reads one exported report into its layer and module breakdown. */
export async function analyzeNsysReport(path: string, options: NsysReadOptions = {}): Promise<NsysBreakdown> {
  const analyzer = new NsysModuleAnalyzer(options.extraFamilies);
  await readNsysReport(path, analyzer.onRecord, options);
  return analyzer.finish();
}
