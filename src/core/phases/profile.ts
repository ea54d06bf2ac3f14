import { sayHinted } from '../../shared/remedy';
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { FindingsUpdate, PhaseContext } from '../campaign/phaseContext';
import { RunFolder, RunStatus } from '../runs/runFolder';
import { analyzeTracesInWorker } from '../trace/analyzeInWorker';
import { breakdownTables } from '../trace/format';
import { workloadSteps } from '../trace/steps';
import { TraceAnalysisOptions, TraceBreakdown } from '../trace/types';
import { agentOptionArgs } from '../../remote/agentOptionArgs';
import { AgentEvent, ProfileCapture } from '../../remote/agentProtocol';
import { RunSummary } from '../../shared/results';
import { AgentRunOutcome, runAgentCommand } from './agentRun';
import { recordConfiguration } from './configuration';
import { execText, Transport } from '../../remote/transport';
import { collectNsys, nsysFindingsUpdate, NsysServer } from './profileNsys';
import { compareProfilers, torchProfileOfSameServer } from './profilerAgreement';
import { findingSentence, NsysBreakdown } from '../trace/nsysModules';

export interface ProfileOptions {
  /** Requests decoding at once during the profile (the decode batch); default 4. */
  concurrency?: number;
  /** Tokens per request, about the number of decode steps profiled; default 48. */
  outputLen?: number;
  inputLen?: number;
  model?: string;
  /** Where the server writes traces, when its command line does not say (vLLM) or to choose it (SGLang). */
  traceDir?: string;
  expectRanks?: number;
  /** Seconds to wait for /stop_profile while the ranks flush; default 1200. */
  stopTimeoutS?: number;
  /** SGLang: decode steps the batch runs before the capture starts, and the forward steps it captures (a bounded, steady-state capture). */
  delaySteps?: number;
  numSteps?: number;
  /** SGLang: record operators' input shapes, and their source lines, in the trace (larger traces). */
  recordShapes?: boolean;
  withStack?: boolean;
  /** Kernel families and step annotation for the analysis (the user's settings). */
  analysis?: TraceAnalysisOptions;
  /**
   * Nsight Systems instead of the torch profiler: the server already runs under nsys (withNsysServer),
   * /start_profile and /stop_profile bound the capture, then `stop` makes nsys write its report, which the
   * agent exports and reads on the host; its records and Kineto traces come back into the run folder.
   */
  nsys?: NsysServer;
}

export interface ProfilePhaseOutcome {
  run: RunFolder;
  summary: RunSummary;
  breakdown?: TraceBreakdown;
  /** An Nsight Systems profile's layer and module breakdown. */
  nsys?: NsysBreakdown;
  /** Local copies of the traces, in the run folder. */
  traces: string[];
  agent: AgentRunOutcome<'profile'>;
}

interface RemoteTrace {
  path: string;
  rank: number | null;
  bytes: number;
  host?: string;
  /** vLLM's API-server trace (CPU only, no rank): kept in the run folder, not in the per-rank breakdown. */
  frontend?: boolean;
  /** Which of a cluster's hosts holds it (0, the head, for one host). */
  node: number;
}

export function profileAgentArgs(options: ProfileOptions, url: string, nodes = 1): string[] {
  return agentOptionArgs('profile', {
    url,
    concurrency: options.concurrency,
    outputLen: options.outputLen,
    inputLen: options.inputLen,
    model: options.model,
    traceDir: options.traceDir,
    expectRanks: options.expectRanks,
    stopTimeout: options.stopTimeoutS,
    delaySteps: options.delaySteps,
    numSteps: options.numSteps,
    recordShapes: options.recordShapes || undefined,
    withStack: options.withStack || undefined,
    nodes: nodes > 1 ? nodes : undefined,
    profiler: options.nsys ? 'nsys' : undefined,
  });
}

/**
 * The profiler phase: the agent starts the server's torch profiler, drives a short decode workload
 * and reports each rank's trace; the traces are copied into the run folder, analysed in worker
 * threads, and the breakdown (result.json and breakdown.json) goes to the results view and the
 * findings document.
 */
export async function runProfilePhase(ctx: PhaseContext, options: ProfileOptions = {}): Promise<ProfilePhaseOutcome> {
  const nodes = ctx.nodes && ctx.nodes.length > 1 ? ctx.nodes : [];
  const args = profileAgentArgs(options, ctx.target.serverUrl, nodes.length);
  const { nsys, ...recorded } = options;
  const run = RunFolder.create(ctx.workspace, 'profile', ctx.target.name, {
    ...recorded,
    ...(nsys ? { profiler: 'nsys', nsysReport: nsys.report } : {}),
    url: ctx.target.serverUrl,
    agentArgs: args,
  });
  const summary: RunSummary = { id: run.info.id, phase: 'profile', target: ctx.target.name, startedAt: run.info.startedAt, status: 'running' };
  const remote: RemoteTrace[] = [];
  const publish = (stage: string, message: string) => {
    summary.headline = message;
    summary.profile = { stage, message };
    ctx.sink.runChanged({ ...summary });
  };

  const onEvent = (event: AgentEvent) => {
    switch (event.type) {
      case 'server':
        if (event.server.simulated && !summary.simulated) {
          summary.simulated = true;
          run.update({ simulated: true });
        }
        break;
      case 'log':
        ctx.log[event.level](`profile: ${sayHinted(event, ctx.words)}`);
        break;
      case 'profile.status':
        ctx.log.info(`profile: ${event.message}`);
        publish(event.stage, event.message);
        break;
      case 'progress':
        if (event.message) ctx.log.debug(`profile: ${event.message}`);
        break;
      case 'profile.trace':
        remote.push({ path: event.path, rank: event.rank, bytes: event.bytes, host: event.host, frontend: event.frontend, node: 0 });
        // A trace whose file name carries no rank gets one when it is read; the log says so rather than "rank ?".
        ctx.log.info(
          `profile: ${event.rank === undefined || event.rank === null ? 'a trace (its rank is read from the file)' : `the trace of rank ${event.rank}`} is ready: ${event.path} (${(event.bytes / 1e6).toFixed(1)} MB)`,
        );
        break;
      case 'error':
        ctx.log.error(`profile on ${ctx.target.name}: ${sayHinted(event, ctx.words)}`);
        break;
      default:
        break;
    }
  };

  ctx.sink.runChanged({ ...summary });
  summary.configuration = await recordConfiguration(ctx, run, ctx.target.serverUrl);
  // A multi-node server: every host writes its own ranks' traces. Each host's clock before the capture
  // tells its new files from old ones (the hosts' clocks need not agree).
  const clocks = await Promise.all(
    nodes.slice(1).map((n) =>
      hostClock(n.transport, n.agent.python).catch((err) => {
        ctx.log.warn(`profile: ${err instanceof Error ? err.message : String(err)}; that host's traces are not collected.`);
        return undefined;
      }),
    ),
  );
  const agent = await runAgentCommand(ctx.transport, ctx.agent, 'profile', args, run, { signal: ctx.signal, onEvent, apiKey: ctx.apiKey, words: ctx.words });
  const capture = agent.result;
  const finish = (status: RunStatus, reason?: string, breakdown?: TraceBreakdown, traces: string[] = []): ProfilePhaseOutcome => {
    run.finish(status, reason);
    summary.status = status;
    summary.reason = reason;
    if (status !== 'completed') summary.errorCode = agent.errors[0]?.code;
    // The agent's error as data, where the reason is that error (not a later step's failure).
    if (status !== 'completed' && reason === agent.reason) summary.failure = agent.failure;
    if (breakdown) {
      summary.headline = breakdown.headline;
      summary.profile = breakdown as unknown as Record<string, unknown>;
    } else if (status !== 'completed') {
      summary.headline = `Profile ${status}`;
      summary.profile = undefined;
    }
    ctx.sink.runChanged({ ...summary });
    // A failed attempt is no finding: the document keeps results, the run folder and the notification say why.
    // An nsys profile's findings carry its module breakdown beside these categories (profileNsys.ts).
    if (breakdown && !nsys) ctx.sink.findings(findingsUpdate(run, summary, capture, breakdown, traces.length));
    return { run, summary, breakdown, traces, agent };
  };

  if (agent.status !== 'completed') return finish(agent.status, agent.reason);
  if (nsys) {
    const read = await collectNsys(ctx, run, nsys, publish, options.analysis);
    if ('failure' in read) return finish(read.status, read.failure, undefined, read.files);
    const server = capture?.server;
    // Where the same server was profiled with torch too, the two profiles' categories are set side by side.
    const torch = torchProfileOfSameServer(ctx.workspace, run);
    const agreement = torch ? compareProfilers(read.trace, torch.breakdown, torch.run.info.id) : undefined;
    const result = {
      ...read.trace,
      simulated: summary.simulated || server?.simulated === true || undefined,
      model: server?.model ?? undefined,
      capture,
      nsys: read.modules,
      ...(agreement ? { agreement } : {}),
    };
    writeFileSync(join(run.dir, 'breakdown.json'), `${JSON.stringify(read.trace, null, 2)}\n`);
    writeFileSync(join(run.dir, 'nsys-breakdown.json'), `${JSON.stringify(read.modules, null, 2)}\n`);
    run.writeResult(result);
    const outcome = finish('completed', undefined, read.trace, read.files);
    summary.headline = findingSentence(read.modules);
    // The views draw the layer and module breakdown beside the categories (profileView.ts shapes it).
    summary.profile = { ...summary.profile, nsys: read.modules } as unknown as RunSummary['profile'];
    ctx.sink.runChanged({ ...summary });
    ctx.sink.findings(nsysFindingsUpdate(run, summary, capture, read, agreement));
    return { ...outcome, nsys: read.modules };
  }
  if (nodes.length > 1 && capture) {
    publish('collect', `collecting the trace files of ${nodes.length - 1} more host(s)`);
    const collected = await Promise.all(
      nodes.slice(1).map(async (n, i) => {
        if (clocks[i] === undefined) return { status: 'failed' as const, reason: 'its clock could not be read' };
        const collectArgs = agentOptionArgs('profile', {
          collectSince: clocks[i],
          traceDir: capture.trace_dir,
          expectRanks: typeof capture.expected_ranks === 'number' ? capture.expected_ranks : undefined,
        });
        return runAgentCommand(n.transport, n.agent, 'profile', collectArgs, run.nodeLog(`${i + 1}-${n.target.host ?? n.target.name}`), {
          signal: ctx.signal,
          words: ctx.words,
          onEvent: (event) => {
            if (event.type !== 'profile.trace') return;
            // A trace folder on a shared file system (NFS, as clusters often mount) shows every host every rank's file: each once.
            if (remote.some((t) => t.path === event.path && t.bytes === event.bytes)) {
              ctx.log.info(`profile: ${event.path} on ${n.transport.label} is the file the head reported (a shared folder); fetched once`);
              return;
            }
            remote.push({ path: event.path, rank: event.rank, bytes: event.bytes, host: event.host, frontend: event.frontend, node: i + 1 });
          },
        });
      }),
    );
    const lost = collected.map((c, i) => ({ c, i })).filter(({ c }) => c.status !== 'completed');
    if (ctx.signal?.aborted) return finish('cancelled', "Cancelled while collecting the other hosts' traces; the capture is in events.jsonl.");
    // One host without its traces still leaves the others' breakdown: said, not fatal.
    for (const { c, i } of lost) ctx.log.warn(`profile: no traces from ${nodes[i + 1].transport.label}: ${c.reason ?? c.status}`);
  }
  if (!remote.length) return finish('failed', 'The agent finished but reported no trace file; see the run log (events.jsonl).');

  // Copy the traces into the run folder, each over its own host's connection. Every event names its
  // host, so traces of a multi-node server are told apart; a host no connection reaches is skipped.
  const hosts = new Set(remote.map((t) => `${t.node}:${t.host ?? ''}`));
  const firstHost = remote[0].host ?? '';
  const local: string[] = [];
  const frontend: string[] = [];
  const skipped: string[] = [];
  const localNode = new Map<string, number>();
  mkdirSync(join(run.dir, 'traces'), { recursive: true });
  try {
    for (const [i, t] of remote.entries()) {
      if (ctx.signal?.aborted) return finish('cancelled', 'Cancelled while fetching the traces; the capture is in events.jsonl.', undefined, local);
      if (t.node === 0 && (t.host ?? '') !== firstHost) {
        skipped.push(`${t.host}:${t.path}`);
        continue;
      }
      const transport = t.node === 0 ? ctx.transport : nodes[t.node].transport;
      const name = hosts.size > 1 ? `node${t.node}-${t.host ?? 'host'}-${basename(t.path)}` : basename(t.path);
      const to = join(run.dir, 'traces', name);
      publish('fetch', `fetching trace ${i + 1} of ${remote.length} (${(t.bytes / 1e6).toFixed(1)} MB) from ${transport.label}`);
      await transport.download(t.path, to);
      localNode.set(to, t.node);
      (t.frontend ? frontend : local).push(to);
    }
  } catch (err) {
    return finish(
      'failed',
      `Copying the traces from ${ctx.transport.label} failed: ${err instanceof Error ? err.message : String(err)}. They are still on the host (see events.jsonl); analyse them there with infbench analyze, or fetch them and run it here.`,
      undefined,
      local,
    );
  }
  if (skipped.length) ctx.log.warn(`profile: ${skipped.length} trace(s) sit on other hosts and were not fetched: ${skipped.join(', ')}`);
  if (frontend.length)
    ctx.log.info(
      `profile: the API server's CPU-only trace is kept in the run folder (${frontend.map((f) => basename(f)).join(', ')}), not in the per-rank breakdown`,
    );
  if (!local.length) return finish('failed', "Only the API server's CPU-only trace came back, no rank's: see the run log (events.jsonl).", undefined, frontend);

  let breakdown: TraceBreakdown;
  try {
    publish('analyze', `analysing ${local.length} trace(s)`);
    let lastNote = 0;
    // The workload the agent drove is a witness for steps the server does not name.
    const drove = capture?.workload;
    const expectedSteps = drove ? workloadSteps(drove.concurrency, drove.output_len) : undefined;
    breakdown = await analyzeTracesInWorker(
      local,
      { ...(expectedSteps ? { expectedSteps } : {}), ...(options.analysis ?? {}) },
      {
        signal: ctx.signal,
        onProgress: (path, read, total) => {
          if (Date.now() - lastNote < 1000) return;
          lastNote = Date.now();
          publish('analyze', `analysing ${basename(path)}: ${((100 * read) / Math.max(1, total)).toFixed(0)}%`);
        },
      },
    );
  } catch (err) {
    if (ctx.signal?.aborted)
      return finish('cancelled', 'Cancelled during the analysis; the traces are in the run folder (infbench analyze reads them).', undefined, local);
    return finish('failed', `Analysing the traces failed: ${err instanceof Error ? err.message : String(err)}`, undefined, local);
  }
  if (skipped.length) breakdown.warnings.push(`${skipped.length} trace(s) on other hosts were not analysed: ${skipped.join(', ')}`);
  if (nodes.length > 1) {
    const byNode = nodeSkew(
      breakdown,
      (file) => localNode.get(file),
      nodes.map((n) => n.transport.label),
    );
    if (byNode) breakdown.warnings.push(byNode);
  }
  const server = capture?.server;
  const result = { ...breakdown, simulated: summary.simulated || server?.simulated === true || undefined, model: server?.model ?? undefined, capture };
  writeFileSync(join(run.dir, 'breakdown.json'), `${JSON.stringify(breakdown, null, 2)}\n`);
  run.writeResult(result);
  return finish('completed', undefined, breakdown, local);
}

function findingsUpdate(
  run: RunFolder,
  summary: RunSummary,
  capture: ProfileCapture | undefined,
  breakdown: TraceBreakdown | undefined,
  traces: number,
): FindingsUpdate {
  const lines: string[] = [];
  const server: Partial<ProfileCapture['server']> = capture?.server ?? {};
  const workload: Partial<ProfileCapture['workload']> = capture?.workload ?? {};
  if (breakdown) lines.push(`**${breakdown.headline}**`);
  const who = server.kind ? `${server.kind} ${server.version ?? ''}`.trim() : 'the server';
  const model = server.model ? ` serving \`${server.model}\`` : '';
  const load = workload.concurrency ? `, ${workload.concurrency} request(s) at once × ${workload.output_len} output tokens` : '';
  lines.push(`torch.profiler traces of ${who}${model}${load}; ${traces} trace file(s) analysed. Run \`${run.info.id}\`.`);
  if (summary.simulated) lines.push('⚠ **Simulator**: these traces come from the inference-bench simulator (a known timing model), not a real model server.');
  if (summary.status !== 'running' && summary.status !== 'completed') lines.push(`Run ${summary.status}: ${summary.reason ?? ''}`.trim());
  for (const w of breakdown?.warnings ?? []) lines.push(`Note: ${w}`);
  return {
    sectionId: `profile-${run.info.id}`,
    heading: `Where the decode step goes — ${summary.target}`,
    lines,
    tables: breakdown ? breakdownTables(breakdown) : [],
  };
}

/** The host's clock (seconds since the epoch), read there: new trace files are the ones written after it. */
async function hostClock(transport: Transport, python: string): Promise<number> {
  const { stdout, result } = await execText(transport, [python, '-c', 'import time; print(time.time())']);
  const t = Number(stdout.trim());
  if (result.code !== 0 || !Number.isFinite(t)) throw new Error(`Could not read the clock of ${transport.label} with ${python}: exit code ${result.code}.`);
  return t;
}

/** "Skew by host: ..." — each host's mean decode step over its ranks, the slowest named; undefined for one host or no decode steps. */
export function nodeSkew(breakdown: TraceBreakdown, nodeOf: (file: string) => number | undefined, labels: string[]): string | undefined {
  const perNode = new Map<number, { ranks: number[]; stepMs: number[] }>();
  for (const r of breakdown.ranks) {
    const node = nodeOf(r.file);
    const ms = r.decode.stepMs?.mean;
    if (node === undefined || ms === undefined) continue;
    const entry = perNode.get(node) ?? { ranks: [], stepMs: [] };
    entry.ranks.push(r.rank);
    entry.stepMs.push(ms);
    perNode.set(node, entry);
  }
  if (perNode.size < 2) return undefined;
  const rows = [...perNode.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([node, e]) => ({ node, ranks: e.ranks.sort((a, b) => a - b), ms: e.stepMs.reduce((a, b) => a + b, 0) / e.stepMs.length }));
  const slowest = rows.reduce((a, b) => (b.ms > a.ms ? b : a));
  const fastest = rows.reduce((a, b) => (b.ms < a.ms ? b : a));
  const spread = (100 * (slowest.ms - fastest.ms)) / fastest.ms;
  return (
    `Skew by host: ${rows.map((r) => `${labels[r.node] ?? `host ${r.node}`} (ranks ${r.ranks.join(', ')}) ${r.ms.toFixed(2)} ms per decode step`).join('; ')}` +
    (spread >= 1 ? ` — ${labels[slowest.node] ?? `host ${slowest.node}`} is ${spread.toFixed(0)}% slower.` : '.')
  );
}
