import { sayHinted } from '../../shared/remedy';
import { FindingsUpdate, PhaseContext } from '../campaign/phaseContext';
import { DEFAULT_MACRO_OPTIONS, MacroOptions, datasetText, macroAgentArgs } from '../macro/options';
import { failureTable, levelFlagLines, macroHeadline, quotedFiguresTable } from '../macro/tables';
import { SERVING_TABLE_FILE, writeServingTable } from '../findings/servingTable';
import { saturationLines, serverStateTable } from '../macro/serverState';
import { conversationTable } from '../macro/conversations';
import { steadyWindowTable } from '../macro/steadyWindow';
import { MAX_REQUEST_POINTS, REQUEST_TRACE_FILE, requestPoint, writeRequestTrace } from '../runs/requestTrace';
import { markLevel } from '../macro/levelFlags';
import { dispatchDelayLines, dispatchDelayTable, gpuTelemetryLines, gpuTelemetryTable, paretoTables } from '../macro/gpuAndDelay';
import { gpusOfCommand, paretoPoint } from '../../shared/pareto';
import { RunFolder } from '../runs/runFolder';
import { AgentEvent, ServerInfo } from '../../remote/agentProtocol';
import { MacroLevelSummary, MacroRequestPoint, RunSummary } from '../../shared/results';
import { AgentRunOutcome, runAgentCommand } from './agentRun';
import { recordConfiguration } from './configuration';
import { collapseTrials, QUOTED_TRIAL_FIGURES, trialsOf, trialsTable } from '../macro/trials';
import { SloOutcome, sloLines, sloOutcomeOf } from '../macro/sloSearch';

export interface MacroPhaseOutcome {
  run: RunFolder;
  summary: RunSummary;
  /** Final summaries of the levels that finished, in order (what result.json holds under `levels`). */
  levels: MacroLevelSummary[];
  agent: AgentRunOutcome<'macro'>;
  /** The SLO verdicts and the search's answer, when the run was given objectives (--slo). */
  slo?: SloOutcome;
}

// Findings and sidebar updates from running aggregates, at most this often.
const LIVE_UPDATE_MS = 1000;
// The agent reports a level's progress every second; the log takes one line every this many ms.
const PROGRESS_LOG_MS = 10_000;

/**
 * Runs the macro phase on the context's target: the agent's load generator streams requests to the
 * server, and every finished request, running aggregate and final level is turned into run-summary
 * updates (results view, sidebar) and findings updates (one table row per level) as it arrives.
 * result.json in the run folder holds one object per level with `vllm bench serve`'s field names.
 */
export async function runMacroPhase(ctx: PhaseContext, options: MacroOptions = {}): Promise<MacroPhaseOutcome> {
  const { apiKey, ...stored } = options;
  const args = macroAgentArgs(stored, ctx.target.serverUrl);
  const settings = { ...DEFAULT_MACRO_OPTIONS, ...stored, url: options.url ?? ctx.target.serverUrl };
  const run = RunFolder.create(ctx.workspace, 'macro', ctx.target.name, { ...settings, agentArgs: args });
  const finals: MacroLevelSummary[] = [];
  const live = new Map<number, MacroLevelSummary>();
  const requests: MacroRequestPoint[] = [];
  const summary: RunSummary = {
    id: run.info.id,
    phase: 'macro',
    target: ctx.target.name,
    startedAt: run.info.startedAt,
    status: 'running',
    macro: { levels: [], requests },
  };
  // The server as the agent found it (its `server` event, then the result's).
  let server: Partial<ServerInfo> = {};
  let lastLive = 0;
  let lastProgressLog = 0;
  // The level now running and when its first progress came, for the time left at its pace.
  let progressLevel: { label: string; since: number } | undefined;

  const currentLevels = (): MacroLevelSummary[] => {
    const all = new Map<number, MacroLevelSummary>(live);
    finals.forEach((l) => all.set(Number(l.level), l));
    return [...all.entries()].sort((a, b) => a[0] - b[0]).map(([, l]) => l);
  };
  const publish = (force: boolean) => {
    const now = Date.now();
    if (!force && now - lastLive < LIVE_UPDATE_MS) return;
    lastLive = now;
    const levels = currentLevels();
    summary.macro = { levels, requests };
    summary.headline = macroHeadline(collapseTrials(levels));
    ctx.sink.runChanged({ ...summary });
    // The findings cite the run folder's full table: it is there (levels so far) before the citation is.
    if (levels.length) keepServingTable(levels);
    ctx.sink.findings(findingsUpdate(run, summary, levels, settings, server));
  };
  const keepServingTable = (levels: MacroLevelSummary[]) => {
    try {
      writeServingTable(run.dir, levels, METRICS_NOTE);
    } catch (err) {
      ctx.log.warn(`macro: the full serving table could not be written to the run folder: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const onEvent = (event: AgentEvent) => {
    switch (event.type) {
      case 'server':
        server = { ...server, ...event.server };
        if (event.server.simulated && !summary.simulated) {
          summary.simulated = true;
          run.update({ simulated: true });
        }
        break;
      case 'log':
        ctx.log[event.level](`macro: ${sayHinted(event, ctx.words)}`);
        break;
      case 'progress': {
        // The agent says how far a level is every second, finished requests or not (a level whose streams
        // stall still shows it is alive); the log takes one of those lines every PROGRESS_LOG_MS.
        if (!event.message) break;
        const now = Date.now();
        // The level it is about ("c=8", "rate 4/s"); progress of other work (reading a dataset) names none.
        const label = event.label;
        if (label) {
          if (progressLevel?.label !== label) progressLevel = { label, since: now };
          summary.levelProgress = { level: label, done: event.done, total: event.total, elapsedS: (now - progressLevel.since) / 1000 };
          ctx.sink.runChanged({ ...summary });
        }
        if (now - lastProgressLog >= PROGRESS_LOG_MS) {
          lastProgressLog = now;
          ctx.log.info(`macro: ${event.message}`);
        } else ctx.log.debug(`macro: ${event.message}`);
        break;
      }
      case 'macro.request': {
        requests.push(requestPoint(event.level, event.record));
        if (requests.length > MAX_REQUEST_POINTS) requests.splice(0, requests.length - MAX_REQUEST_POINTS);
        publish(false);
        break;
      }
      case 'macro.level': {
        const level = markLevel(event.summary);
        if (event.partial) {
          live.set(event.level, level);
          publish(false);
        } else {
          live.delete(event.level);
          finals.push(level);
          if (level.simulated === true && !summary.simulated) {
            summary.simulated = true;
            run.update({ simulated: true });
          }
          publish(true);
        }
        break;
      }
      case 'error':
        ctx.log.error(`macro on ${ctx.target.name}: ${sayHinted(event, ctx.words)}`);
        break;
      default:
        break;
    }
  };

  ctx.sink.runChanged({ ...summary });
  summary.configuration = await recordConfiguration(ctx, run, settings.url, apiKey ?? ctx.apiKey);
  const agent = await runAgentCommand(ctx.transport, ctx.agent, 'macro', args, run, {
    signal: ctx.signal,
    onEvent,
    apiKey: apiKey ?? ctx.apiKey,
    words: ctx.words,
  });
  // Every level marked once more now that the run's end is known: a level cut short says so (and how
  // far it got) everywhere, and no headline quotes it.
  const stopped = agent.status === 'completed' || agent.status === 'running' ? undefined : agent.status;
  if (agent.result?.server) server = { ...server, ...agent.result.server };
  const hostCores = agent.result?.client?.cpu_count ?? undefined;
  const marked = finals.map((l) => markLevel(l, { stopped, hostCores }));
  // The level that was running when the connection went (no final summary came): kept as cut short.
  for (const l of live.values()) {
    if (!stopped) continue;
    const done = (l.completed ?? 0) + (l.failed ?? 0);
    const planned = typeof l.num_prompts === 'number' ? l.num_prompts : undefined;
    marked.push({ ...markLevel(l, { hostCores }), partial: true, cut: { reason: stopped, done, planned } });
  }
  finals.splice(0, finals.length, ...marked);
  if (!agent.result) {
    // Cancelled or cut off before the agent's result: keep what arrived, one object per level.
    run.writeResult({ levels: finals, server, cancelled: agent.status === 'cancelled', partial: true, status: agent.status, reason: agent.reason });
  } else if (Array.isArray(agent.result.levels)) {
    run.writeResult({ ...agent.result, levels: finals });
  }
  if (finals.length) keepServingTable(finals);
  let requestTracePath: string | undefined;
  try {
    requestTracePath = writeRequestTrace(run, finals);
  } catch (err) {
    ctx.log.warn(`macro: the requests' Chrome trace could not be written: ${err instanceof Error ? err.message : String(err)}`);
  }
  summary.status = agent.status;
  summary.reason = agent.reason;
  summary.errorCode = agent.errors[0]?.code;
  summary.failure = agent.failure;
  delete summary.levelProgress;
  summary.macro = { levels: [...finals], requests };
  summary.headline = macroHeadline(collapseTrials(finals)) ?? summary.headline;
  const slo = sloOutcomeOf(agent.result as Record<string, unknown> | undefined);
  ctx.sink.runChanged({ ...summary });
  // An attempt that measured nothing (the server down, a bad option) is no finding: the run folder keeps why.
  if (finals.length || agent.status === 'completed') ctx.sink.findings(findingsUpdate(run, summary, finals, settings, server, requestTracePath, slo));
  return { run, summary, levels: finals, agent, slo };
}

// Said in the findings when no level has GPU samples; the agent's log says which of these it was.
const NO_GPU_NOTE = 'none sampled (no nvidia-smi on the host, a ROCm host, or --gpu-sample-ms 0)';

const METRICS_NOTE = 'Metrics as `vllm bench serve` defines them: TTFT, TPOT = (E2EL − TTFT)/(output − 1), ITL pooled over requests; ms.';

function findingsUpdate(
  run: RunFolder,
  summary: RunSummary,
  levels: MacroLevelSummary[],
  settings: MacroOptions & { url: string },
  server: Partial<ServerInfo>,
  requestTracePath?: string,
  slo?: SloOutcome,
): FindingsUpdate {
  const lines: string[] = [];
  if (summary.headline) lines.push(`**${summary.headline}**`);
  const model = server.model ? `\`${server.model}\`` : 'the server';
  const load = settings.requestRate?.length
    ? `request rates ${settings.requestRate.map((r) => (Number.isFinite(r) ? r : '∞')).join(', ')}/s`
    : `concurrency ${(settings.concurrency ?? []).join(', ')}`;
  lines.push(
    `${model} at ${settings.url}, ${settings.api ?? 'completions'} API, ${datasetText(settings)}` +
      `${settings.ignoreEos === false ? '' : ' (ignore_eos)'}, ${load}; load generator on the server's host. Run \`${run.info.id}\`.`,
  );
  if (summary.simulated) lines.push('⚠ **Simulator**: these numbers come from the inference-bench simulator (a known timing model), not a real model server.');
  if (summary.status !== 'running' && summary.status !== 'completed') lines.push(`Run ${summary.status}: ${summary.reason ?? ''}`.trim());
  // The agent counts the requests whose usage the server left out, and those whose usage could not be true.
  const tokenCounts = levels.map((l) => (l.token_count ?? {}) as { source?: string; usage_missing?: number; usage_rejected?: number; usage_problem?: string });
  const clientCounted = tokenCounts.some((t) => (t.usage_missing ?? (['client', 'mixed'].includes(t.source ?? 'usage') ? 1 : 0)) > 0);
  if (clientCounted) {
    lines.push(
      "Token counts: the server sent no `usage`, so output tokens are the client's count of streamed chunks and prompt tokens an estimate; ask the server for `stream_options.include_usage` for exact counts.",
    );
  }
  const rejected = tokenCounts.reduce((n, t) => n + (t.usage_rejected ?? 0), 0);
  if (rejected) {
    const why = tokenCounts.find((t) => t.usage_problem)?.usage_problem;
    lines.push(
      `⚠ Token counts: the server's \`usage\` could not be true for ${rejected} request(s)${why ? ` (${why})` : ''}; their output tokens are the client's count of streamed chunks and their prompt tokens an estimate.`,
    );
  }
  lines.push(...sloLines(slo, levels));
  lines.push(...levelFlagLines(levels));
  lines.push(...saturationLines(levels));
  lines.push(...dispatchDelayLines(levels), ...gpuTelemetryLines(levels, summary.status === 'running' ? undefined : NO_GPU_NOTE));
  // The document quotes the figures people cite; the full table (means, ITL, E2EL, req/s, client CPU) is the run folder's and the results view's.
  // Cited once a level has finished: the run folder has the file from then on.
  const note = levels.length
    ? `${METRICS_NOTE} The full table (means, ITL, E2E latency, request throughput, client CPU): \`.inference-bench/runs/${run.info.id}/${SERVING_TABLE_FILE}\` and the results view.`
    : METRICS_NOTE;
  // Repeated trials: one row per load, each figure its mean ± 95% interval (CV); the trials' own rows are the full table's.
  const trials = trialsOf(levels) > 1 ? trialsTable(levels, QUOTED_TRIAL_FIGURES) : undefined;
  const tables = [trials ? { ...trials, note: `${trials.note} ${note}` } : quotedFiguresTable(levels, note)];
  const failures = failureTable(levels);
  if (failures) tables.push(failures);
  const steady = steadyWindowTable(levels);
  if (steady) tables.push(steady);
  const state = serverStateTable(levels);
  if (state) tables.push(state);
  // The GPUs over the levels, the client's dispatch delay, and the front of the levels (tokens/s per user against per GPU).
  for (const t of [gpuTelemetryTable(levels), dispatchDelayTable(levels)]) if (t) tables.push(t);
  const series = summary.configuration?.name ?? summary.target;
  const points = levels.map((l) => paretoPoint(series, l, gpusOfCommand(summary.configuration?.argv))).filter((p) => p !== undefined);
  tables.push(...paretoTables(points, `macro-${run.info.id}`, 'over the levels'));
  const conversations = conversationTable(levels);
  if (conversations) tables.push(conversations);
  if (requestTracePath) {
    lines.push(
      `Each request and the server's state over time, as a Chrome trace that opens in Perfetto beside the server's own profile: \`.inference-bench/runs/${run.info.id}/${REQUEST_TRACE_FILE}\` in the workspace.`,
    );
  }
  return { sectionId: `macro-${run.info.id}`, heading: `Serving benchmark — ${summary.target}`, lines, tables };
}
