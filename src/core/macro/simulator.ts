import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The inference-bench simulator (simulator/vllm_sim.py): a vLLM-API server with a known timing model,
 * for tests, benchmarks and the demo. It is a SIMULATOR: /v1/models reports owned_by
 * "inference-bench-simulator" and every result taken from it is marked simulated.
 */
export interface SimulatorOptions {
  python?: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  preset?: string;
  stepBaseMs?: number;
  stepPerSeqMs?: number;
  prefillPerTokenMs?: number;
  maxBatch?: number;
  zeroCost?: boolean;
  paceMs?: number;
  profilerDir?: string;
  profileMaxSteps?: number;
  layers?: number;
  worldSize?: number;
  /** e.g. "error500:every=5", "cut:every=7:after=3", "slow:every=4:ms=500". */
  faults?: string[];
  /** Extra raw arguments for vllm_sim.py. */
  extraArgs?: string[];
}

export interface RunningSimulator {
  url: string;
  port: number;
  model: string;
  mode: string;
  process: ChildProcess;
  /** Stops the simulator (SIGTERM, then SIGKILL) and waits until it is gone. */
  stop(): Promise<void>;
}

/** Where simulator/vllm_sim.py is: beside the bundle (dist/..), or in the source tree. */
export function simulatorScriptPath(): string {
  const candidates = [
    resolve(__dirname, '..', 'simulator', 'vllm_sim.py'),
    resolve(__dirname, '..', '..', '..', 'simulator', 'vllm_sim.py'),
    join(process.cwd(), 'simulator', 'vllm_sim.py'),
  ];
  const found = candidates.find((p) => existsSync(p));
  if (!found)
    throw new Error(
      `The simulator (simulator/vllm_sim.py) was not found next to this build; looked in ${candidates.join(', ')}. Run from a checkout of the repository.`,
    );
  return found;
}

export function simulatorArgs(o: SimulatorOptions): string[] {
  const args = ['--host', o.host ?? '127.0.0.1', '--port', String(o.port ?? 0)];
  const add = (flag: string, v: unknown) => {
    if (v !== undefined && v !== null) args.push(flag, String(v));
  };
  add('--preset', o.preset);
  add('--step-base-ms', o.stepBaseMs);
  add('--step-per-seq-ms', o.stepPerSeqMs);
  add('--prefill-per-token-ms', o.prefillPerTokenMs);
  add('--max-batch', o.maxBatch);
  add('--pace-ms', o.paceMs);
  add('--profiler-dir', o.profilerDir);
  add('--profile-max-steps', o.profileMaxSteps);
  add('--layers', o.layers);
  add('--world-size', o.worldSize);
  if (o.zeroCost) args.push('--zero-cost');
  for (const f of o.faults ?? []) args.push('--fault', f);
  return [...args, ...(o.extraArgs ?? [])];
}

/** The simulator's ready record, `{"ready": true, "url": ..., ...}`, or undefined for any other line. */
function readyRecord(line: string): { url: string; port: number; model: string; mode: string } | undefined {
  try {
    const value = JSON.parse(line) as { ready?: unknown; url: string; port: number; model: string; mode: string } | null;
    return value?.ready === true ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the simulator as a child process and resolves once it prints its ready line. */
export function startSimulator(o: SimulatorOptions = {}, onOutput?: (text: string) => void): Promise<RunningSimulator> {
  const python = o.python ?? 'python3';
  const child = spawn(python, ['-u', simulatorScriptPath(), ...simulatorArgs(o)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((res) => child.once('exit', () => res()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolvePromise, reject) => {
    let stdout = '';
    let stderr = '';
    let ready = false;
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`The simulator did not start within 15 s (${python} ${simulatorScriptPath()}). Its output: ${stderr.trim().slice(-500) || '(none)'}`));
    }, 15000);
    // stdout is lines: the one ready record (JSON), which is ours, and the simulator's log, which is the caller's.
    child.stdout!.on('data', (b: Buffer) => {
      stdout += b.toString('utf8');
      const lines = stdout.split('\n');
      stdout = lines.pop() ?? '';
      for (const line of lines) {
        const info = ready ? undefined : readyRecord(line);
        if (!info) {
          onOutput?.(`${line}\n`);
          continue;
        }
        ready = true;
        clearTimeout(timer);
        resolvePromise({ ...info, process: child, stop });
      }
    });
    child.stderr!.on('data', (b: Buffer) => {
      const text = b.toString('utf8');
      stderr += text;
      onOutput?.(text);
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`Could not start the simulator with "${python}": ${err.message}. Is Python 3 installed? Pass --python.`));
    });
    child.once('exit', (code) => {
      if (ready) return;
      clearTimeout(timer);
      reject(new Error(`The simulator exited (code ${code}) before it was ready: ${stderr.trim().slice(-800) || '(no output)'}`));
    });
  });
}
