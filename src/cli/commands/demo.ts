import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CliCommand, parseCommandArgs } from '../command';
import { stderrLogger } from '../cliLogger';
import { FindingsFile } from '../findingsFile';
import { PhaseContext, ResultSink } from '../../core/campaign/phaseContext';
import { Target } from '../../core/config/target';
import { explainRuns, selectRuns } from '../../core/explain/campaign';
import { budgetFindings } from '../../core/explain/findings';
import { DEFAULT_FINDINGS_DOCUMENT } from '../../core/findings/skeleton';
import { startSimulator } from '../../core/macro/simulator';
import { runMacroPhase } from '../../core/phases/macro';
import { runMicroPhase } from '../../core/phases/micro';
import { runProbePhase } from '../../core/phases/probe';
import { runProfilePhase } from '../../core/phases/profile';
import { runsRoot } from '../../core/runs/runFolder';
import { RunSummary } from '../../shared/results';
import { bundledAgentPath, deployAgent } from '../../remote/agentDeploy';
import { LocalTransport } from '../../remote/localTransport';

const USAGE = `infbench demo — a whole campaign against the bundled SIMULATOR, on this machine

Usage: infbench demo [--workspace DIR] [--findings FILE] [--python PATH] [--quick]

Starts the simulator (a vLLM-API server whose timing model is a Kimi-K2.5-INT4-like model at
tensor-parallel 8: a 21.7 ms decode step, about half of it all-reduce), then over the local transport:
probe, macro (single stream, then a concurrency sweep), micro (on this machine's CPU with PyTorch, if a
Python with torch is found; the numbers then describe this CPU, not a GPU), profiler (the simulator's
per-rank Kineto traces, analysed here), and the decode-step budget. The findings document and the run
folders are left in the workspace. Every figure is labelled as coming from the simulator.

Options:
  --workspace DIR     where the runs and the findings document go (default demo-campaign)
  --findings FILE     the findings document, relative to the workspace (default ${DEFAULT_FINDINGS_DOCUMENT})
  --python PATH       the Python that runs the agent (default python3)
  --torch-python PATH the Python with PyTorch for the micro phase (default: the first of
                      /usr/bin/python3 and python3 that imports torch)
  --quick             fewer requests and shapes (about half a minute)
  --verbose`;

/** The first interpreter that can import torch, or undefined. */
function findTorchPython(candidates: string[]): string | undefined {
  for (const python of candidates) {
    try {
      execFileSync(python, ['-c', 'import torch'], { stdio: 'ignore', timeout: 60_000 });
      return python;
    } catch {
      // not this one
    }
  }
  return undefined;
}

export const demoCommand: CliCommand = {
  name: 'demo',
  summary: 'run the demo campaign against the bundled SIMULATOR: findings document and runs',
  usage: USAGE,
  async run(argv: string[]): Promise<number> {
    const v = parseCommandArgs('demo', {
      args: argv,
      options: {
        workspace: { type: 'string', default: 'demo-campaign' },
        findings: { type: 'string', default: DEFAULT_FINDINGS_DOCUMENT },
        python: { type: 'string', default: 'python3' },
        'torch-python': { type: 'string' },
        quick: { type: 'boolean' },
        verbose: { type: 'boolean' },
      },
      strict: true,
    }).values;
    // The phases' own progress lines repeat what the demo prints; show them only with --verbose.
    const log = v.verbose ? stderrLogger(true) : { ...stderrLogger(false), info: () => undefined };
    const workspace = resolve(v.workspace!);
    const traceDir = join(workspace, '.inference-bench', 'simulator-traces');
    mkdirSync(traceDir, { recursive: true });
    const say = (line: string) => process.stdout.write(`${line}\n`);

    const sim = await startSimulator({ port: 0, preset: 'kimi-k25-tp8', profilerDir: traceDir, python: v.python });
    say(`SIMULATOR (not a real model) serving "${sim.model}" at ${sim.url}`);
    const transport = new LocalTransport();
    const abort = new AbortController();
    const onSigint = () => abort.abort();
    process.once('SIGINT', onSigint);
    const doc = new FindingsFile(join(workspace, v.findings!), log, { workspace });
    const headlines = new Map<string, { progress: string; headline: string }>();
    const sink: ResultSink = {
      runChanged: (run: RunSummary) => {
        // Print a run's headline as each sweep level (or micro part) finishes, so the terminal shows
        // the campaign unfold without a line for every running aggregate.
        const progress = `${run.status}:${run.macro?.levels.filter((l) => !l.partial).length ?? 0}`;
        const last = headlines.get(run.id);
        if (run.headline && (!last || (last.progress !== progress && last.headline !== run.headline))) {
          headlines.set(run.id, { progress, headline: run.headline });
          say(`  ${run.phase}: ${run.headline}`);
        }
      },
      findings: (update) => doc.findings(update),
    };
    try {
      const target: Target = { name: 'demo-simulator', kind: 'local', serverUrl: sim.url, python: v.python! };
      const agent = await deployAgent(transport, bundledAgentPath(), target.python);
      const ctx: PhaseContext = { target, transport, agent, workspace, sink, log, signal: abort.signal };
      const quick = Boolean(v.quick);
      let failures = 0;
      const check = (phase: string, outcome: { status: string; reason?: string }) => {
        if (outcome.status !== 'completed') {
          failures++;
          say(`  ${phase}: ${outcome.status}${outcome.reason ? ` — ${outcome.reason}` : ''}`);
        }
      };

      // The document exists before the first measurement; the probe then fills its header in.
      doc.ensure();
      say(`findings document: ${doc.path}`);
      say('1/6 probe');
      const probe = await runProbePhase(ctx);
      check('probe', probe.agent);
      if (abort.signal.aborted) return 130;

      say('2/6 macro: single stream');
      check('macro', (await runMacroPhase(ctx, { concurrency: [1], requests: quick ? 3 : 6, inputLen: 256, outputLen: 64, warmup: 1 })).agent);
      if (abort.signal.aborted) return 130;
      say('3/6 macro: concurrency sweep');
      check('macro', (await runMacroPhase(ctx, { concurrency: quick ? [4, 32] : [4, 16, 64], inputLen: 256, outputLen: 64, warmup: 1 })).agent);
      if (abort.signal.aborted) return 130;

      say('4/6 micro');
      const torchPython = v['torch-python'] ?? findTorchPython(['/usr/bin/python3', 'python3']);
      if (torchPython) {
        const microCtx = { ...ctx, target: { ...target, python: torchPython }, agent: await deployAgent(transport, bundledAgentPath(), torchPython) };
        const micro = await runMicroPhase(microCtx, {
          model: 'kimi-k2.5',
          tp: 8,
          m: quick ? [1, 16] : [1, 4, 16],
          device: 'cpu',
          repeats: 3,
          arWorldSize: 2,
          // On a CPU the big shapes (lm_head, dense MLP) take minutes and say nothing about a GPU: keep the decode-step ones.
          only: ['moe.gate_up', 'moe.down', 'attn.o_proj'],
        });
        check('micro', micro.agent);
      } else {
        say('  skipped: no Python with PyTorch on this machine (install python3-torch, or pass --torch-python); on the GPU host run `infbench micro`.');
      }
      if (abort.signal.aborted) return 130;

      say('5/6 profiler');
      // One stream, as the single-stream macro run: the budget then sets the profiled step beside its TPOT.
      check('profile', (await runProfilePhase(ctx, { concurrency: 1, outputLen: quick ? 24 : 48, traceDir })).agent);
      if (abort.signal.aborted) return 130;

      say('6/6 where the milliseconds go');
      const budget = explainRuns(selectRuns(workspace));
      doc.findings(budgetFindings(budget));
      for (const line of budgetFindings(budget).lines.slice(0, 3)) say(`  ${line}`);

      say('');
      say(`Findings document: ${doc.path}`);
      say(`Runs:              ${runsRoot(workspace)}`);
      return failures ? 1 : 0;
    } finally {
      process.removeListener('SIGINT', onSigint);
      await transport.close();
      await sim.stop();
    }
  },
};
