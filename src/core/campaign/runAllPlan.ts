// Run All Phases as a plan: which steps it takes on a target (the server's stop and restarts only where
// they are needed), how long each is expected to take and why, and where an interrupted plan goes on.
// Pure: the front end gathers what is known (the probe, the stored runs, the last starts) and shows it.
import type { MacroOptions } from '../macro/options';
import { DEFAULT_MACRO_OPTIONS } from '../macro/options';
import type { RunnablePhase } from './runnablePhase';

/**
 * One step of the plan. `phase` is the run it belongs to: the server's stop and start around micro are
 * done by the micro run, the profiler's start and the restore by the profile run.
 */
export type PlanStepKind = 'probe' | 'macro' | 'stop' | 'micro' | 'start-original' | 'start-profiler' | 'restart-profiler' | 'profile' | 'restore';

export type PlanStepStatus = 'pending' | 'running' | 'done' | 'failed' | 'cancelled' | 'skipped';

export interface PlanStep {
  kind: PlanStepKind;
  phase: RunnablePhase;
  /** What the step does, as the plan shows it. */
  title: string;
  /** Seconds it is expected to take; null when nothing says. */
  expectedS: number | null;
  /** Where the figure comes from ("the last macro run at c=8", "no earlier run: a stated 2 min"). */
  basis: string;
  status: PlanStepStatus;
  /** The run that did it, once it ran. */
  runId?: string;
}

/** A step the plan leaves out, and why ("the GPUs are free: micro runs beside nothing"). */
export interface OmittedStep {
  kind: PlanStepKind;
  why: string;
}

/** What the probe found that decides the server's steps. */
export interface ServerNeeds {
  /** A GPU has more than the micro phase's threshold of its memory taken (the agent's --busy-threshold, 0.5). */
  gpusBusy: boolean | null;
  /** What holds them, in words ("GPU 0: 90% of its memory used"). */
  gpusWhy: string;
  /** The server's torch profiler: on, off, or not known. */
  profiler: boolean | null;
  profilerWhy: string;
}

/** A run stored in the workspace, as far as the plan's estimates need it. */
export interface PastRun {
  id: string;
  phase: RunnablePhase;
  status: string;
  startedAt: string;
  finishedAt?: string;
  /** Macro: each level's key, requests and seconds. */
  levels?: { max_concurrency: number | null; request_rate: number | null; completed: number; failed: number; duration: number }[];
}

/** The last times of the server's stop and starts on this target, from the workspace's server change records. */
export interface ServerTimes {
  stopS?: number;
  /** The original recipe's start (a restore, or a stop-and-start for micro). */
  startOriginalS?: number;
  /** A start with the profiler on. */
  startProfilerS?: number;
  /** The agent's estimate for the original recipe (the host's last start of it), where asked. */
  agentEstimateS?: number | null;
}

export interface PlanInput {
  target: string;
  macro: MacroOptions;
  needs: ServerNeeds;
  /** The target's stored runs, any order. */
  past: PastRun[];
  server: ServerTimes;
}

// Stated defaults where no earlier run says: a probe is seconds; micro's GEMM, all-reduce and launch
// sweeps and a profile's capture, stop and fetch are minutes on a real host.
export const DEFAULT_STEP_S: Record<'probe' | 'micro' | 'profile' | 'stop' | 'start', number> = {
  probe: 15,
  micro: 180,
  profile: 120,
  stop: 30,
  // The seed campaign's vLLM took 36 minutes to load Kimi-K2.5; a first start is said to be unknown
  // rather than guessed that long.
  start: 600,
};
/** A decode step's time assumed for a macro level no earlier run has measured (a large MoE at moderate load). */
export const ASSUMED_DECODE_STEP_S = 0.03;

const RUN_TITLE: Record<'probe' | 'macro' | 'micro' | 'profile', string> = {
  probe: 'probe: what is there (GPUs, server, model, profiler)',
  macro: 'macro on the production configuration (the server as it runs now)',
  micro: 'micro: GEMMs, all-reduce and launch overhead',
  profile: 'profile: a bounded capture of decode steps, broken down by kernel',
};

function seconds(startedAt: string, finishedAt: string | undefined): number | undefined {
  if (!finishedAt) return undefined;
  const s = (Date.parse(finishedAt) - Date.parse(startedAt)) / 1000;
  return Number.isFinite(s) && s >= 0 ? s : undefined;
}

/** The newest completed run of a phase with a known duration. */
function lastDuration(past: PastRun[], phase: RunnablePhase): { s: number; id: string } | undefined {
  const done = past
    .filter((r) => r.phase === phase && r.status === 'completed' && seconds(r.startedAt, r.finishedAt) !== undefined)
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  return done[0] ? { s: seconds(done[0].startedAt, done[0].finishedAt)!, id: done[0].id } : undefined;
}

function phaseEstimate(past: PastRun[], phase: 'probe' | 'micro' | 'profile'): { expectedS: number; basis: string } {
  const last = lastDuration(past, phase);
  if (last) return { expectedS: last.s, basis: `the last ${phase} run (${last.id})` };
  return { expectedS: DEFAULT_STEP_S[phase], basis: `no earlier ${phase} run: a stated ${formatDuration(DEFAULT_STEP_S[phase])}` };
}

/** A level's name as the agent gives it. */
function levelName(l: { max_concurrency: number | null; request_rate: number | null }): string {
  return l.request_rate !== null && l.request_rate !== undefined ? `rate ${l.request_rate}/s` : `c=${l.max_concurrency}`;
}

/**
 * The macro workload's expected time: each level from the newest stored level of the same
 * concurrency or rate (scaled to the requests it will send), a level run for a time by that time, and
 * a level nothing measured from an assumed decode step.
 */
export function macroEstimate(options: MacroOptions, past: PastRun[]): { expectedS: number; basis: string } {
  const o = { ...DEFAULT_MACRO_OPTIONS, ...options };
  const rates = o.requestRate?.length ? o.requestRate : undefined;
  const levels = rates
    ? rates.map((r) => ({ max_concurrency: null, request_rate: r }))
    : o.concurrency.map((c) => ({ max_concurrency: c, request_rate: null }));
  const measured = past.filter((r) => r.phase === 'macro' && r.levels?.length).sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  let total = 0;
  const from = new Set<string>();
  const assumed: string[] = [];
  for (const level of levels) {
    const name = levelName(level);
    if (o.durationS) {
      total += o.durationS;
      continue;
    }
    const requests = o.requests ?? (level.max_concurrency ? Math.max(8, 4 * level.max_concurrency) : 8);
    const seen = measured
      .map((r) => ({ run: r, l: r.levels!.find((x) => levelName(x) === name && x.completed + x.failed > 0 && x.duration > 0) }))
      .find((x) => x.l);
    if (seen?.l) {
      total += (seen.l.duration * requests) / (seen.l.completed + seen.l.failed);
      from.add(seen.run.id);
      continue;
    }
    // Requests go in waves of the concurrency (a rate level: one at a time at worst), each wave outputLen decode steps.
    const waves = Math.ceil(requests / (level.max_concurrency ?? 1));
    total += waves * o.outputLen * ASSUMED_DECODE_STEP_S;
    assumed.push(name);
  }
  const parts: string[] = [];
  if (o.durationS) parts.push(`${o.durationS} s a level, ${levels.length} level${levels.length === 1 ? '' : 's'}`);
  if (from.size) parts.push(`measured in ${[...from].join(', ')}`);
  if (assumed.length) parts.push(`${assumed.join(', ')} not run before: ${Math.round(ASSUMED_DECODE_STEP_S * 1000)} ms a decode step assumed`);
  return { expectedS: total, basis: parts.join('; ') };
}

function startEstimate(known: number | undefined | null, what: string, agent?: number | null): { expectedS: number | null; basis: string } {
  if (known !== undefined && known !== null) return { expectedS: known, basis: `the last ${what} on this target` };
  if (agent) return { expectedS: agent, basis: "the host's last start of this recipe" };
  return { expectedS: null, basis: `no earlier ${what} recorded: as long as the server takes to load` };
}

/** The plan's steps and the steps it leaves out, in order, with their expected times. */
export function planRunAll(input: PlanInput): { steps: PlanStep[]; omitted: OmittedStep[] } {
  const { needs, past, server } = input;
  const step = (kind: PlanStepKind, phase: RunnablePhase, title: string, e: { expectedS: number | null; basis: string }): PlanStep => ({
    kind,
    phase,
    title,
    ...e,
    status: 'pending',
  });
  const steps: PlanStep[] = [step('probe', 'probe', RUN_TITLE.probe, phaseEstimate(past, 'probe'))];
  const omitted: OmittedStep[] = [];
  steps.push(step('macro', 'macro', RUN_TITLE.macro, macroEstimate(input.macro, past)));
  const stop = needs.gpusBusy === true;
  const restart = needs.profiler === false;
  const stopEstimate =
    server.stopS !== undefined
      ? { expectedS: server.stopS, basis: 'the last stop on this target' }
      : { expectedS: DEFAULT_STEP_S.stop, basis: `a stated ${DEFAULT_STEP_S.stop} s` };
  // A start with the profiler loads the same weights: the original's start stands in until one was seen.
  const profilerStart =
    server.startProfilerS === undefined && server.startOriginalS !== undefined
      ? { expectedS: server.startOriginalS, basis: 'the last start of the original on this target (the profiler adds little to a start)' }
      : startEstimate(server.startProfilerS, 'start with the profiler', server.agentEstimateS);
  const originalStart = startEstimate(server.startOriginalS, 'start of the original', server.agentEstimateS);
  if (stop) steps.push(step('stop', 'micro', `stop the server (${needs.gpusWhy})`, stopEstimate));
  else
    omitted.push({
      kind: 'stop',
      why: needs.gpusBusy === false ? `no stop: ${needs.gpusWhy}` : `no stop planned: ${needs.gpusWhy}; micro asks if it finds them busy`,
    });
  steps.push(step('micro', 'micro', RUN_TITLE.micro, phaseEstimate(past, 'micro')));
  // Stopped for micro and wanted with the profiler: started so at once, one start instead of two.
  if (stop && restart) steps.push(step('start-profiler', 'micro', 'start the server with the profiler on', profilerStart));
  else if (stop) steps.push(step('start-original', 'micro', 'start the original server again', originalStart));
  if (restart && !stop) {
    steps.push(step('restart-profiler', 'profile', `restart the server with the profiler on (${needs.profilerWhy})`, stopThen(stopEstimate, profilerStart)));
  } else if (!restart)
    omitted.push({
      kind: 'restart-profiler',
      why: needs.profiler === true ? `no restart: ${needs.profilerWhy}` : `no restart planned: ${needs.profilerWhy}; profile asks if it finds the profiler off`,
    });
  steps.push(step('profile', 'profile', RUN_TITLE.profile, phaseEstimate(past, 'profile')));
  if (restart)
    steps.push(
      step(
        'restore',
        'profile',
        'restore the original server (stop the profiled one, start the production configuration)',
        stopThen(stopEstimate, originalStart),
      ),
    );
  return { steps, omitted };
}

/** A stop and then a start: both times, and where each comes from. */
function stopThen(stop: { expectedS: number | null; basis: string }, start: { expectedS: number | null; basis: string }) {
  return {
    expectedS: stop.expectedS === null || start.expectedS === null ? null : stop.expectedS + start.expectedS,
    basis: `stop: ${stop.basis}; start: ${start.basis}`,
  };
}

/** The plan's expected total, and whether a step's time is unknown (then the total is a lower bound). */
export function planTotal(steps: PlanStep[]): { seconds: number; unknown: number } {
  const counted = steps.filter((s) => s.status !== 'done' && s.status !== 'skipped');
  return { seconds: counted.reduce((n, s) => n + (s.expectedS ?? 0), 0), unknown: counted.filter((s) => s.expectedS === null).length };
}

/** "45 s", "12 min", "1 h 5 min". */
export function formatDuration(s: number): string {
  if (s < 90) return `${Math.max(1, Math.round(s))} s`;
  const min = Math.round(s / 60);
  return min < 90 ? `${min} min` : `${Math.floor(min / 60)} h ${min % 60} min`;
}

/** The plan as lines a user reads: numbered steps with their times, the steps left out, the total. */
export function describePlan(steps: PlanStep[], omitted: OmittedStep[], from = 0): string[] {
  const lines = steps.map((s, i) => {
    const time = s.expectedS === null ? 'time unknown' : `about ${formatDuration(s.expectedS)}`;
    const state = i < from || s.status === 'done' ? ' — done' : '';
    return `${i + 1}. ${s.title}: ${time} (${s.basis})${state}`;
  });
  const total = planTotal(steps.slice(from));
  const out = [...lines];
  if (omitted.length) out.push('', 'Left out:', ...omitted.map((o) => `• ${o.why}`));
  out.push(
    '',
    `Expected in all: ${total.unknown ? 'at least ' : 'about '}${formatDuration(total.seconds)}${total.unknown ? ` (${total.unknown} step${total.unknown === 1 ? '' : 's'} of unknown time)` : ''}.`,
  );
  return out;
}

/** What the probe's result says about the GPUs and the profiler (the agent's ProbeResult, read loosely). */
export function serverNeeds(probe: unknown, busyThreshold = 0.5): ServerNeeds {
  const p = (probe ?? {}) as {
    gpus?: { available?: boolean; devices?: { index: number; memory_used_mib: number | null; memory_total_mib: number | null }[] };
    server?: { reachable?: boolean; profiler?: { enabled: boolean | null; evidence: string | null } };
  };
  const devices = p.gpus?.devices ?? [];
  let gpusBusy: boolean | null;
  let gpusWhy: string;
  if (!p.gpus) [gpusBusy, gpusWhy] = [null, 'the probe did not see the GPUs'];
  else if (!p.gpus.available || !devices.length) [gpusBusy, gpusWhy] = [false, 'no GPU on the host (micro runs on the CPU)'];
  else {
    const used = devices.map((d) => ({ i: d.index, f: d.memory_total_mib ? (d.memory_used_mib ?? 0) / d.memory_total_mib : 0 }));
    const busy = used.filter((u) => u.f > busyThreshold);
    gpusBusy = busy.length > 0;
    const worst = used.reduce((a, b) => (b.f > a.f ? b : a));
    gpusWhy = busy.length
      ? `${busy.length} of ${devices.length} GPUs hold over ${Math.round(busyThreshold * 100)}% of their memory, GPU ${worst.i} ${Math.round(worst.f * 100)}%`
      : `the GPUs are free (at most ${Math.round(worst.f * 100)}% of a GPU's memory in use)`;
  }
  const prof = p.server?.profiler;
  let profiler: boolean | null = prof?.enabled ?? null;
  let profilerWhy: string;
  if (!p.server?.reachable) [profiler, profilerWhy] = [null, 'the server did not answer the probe'];
  else if (profiler === true) profilerWhy = `the profiler is already on${prof?.evidence ? ` (${prof.evidence})` : ''}`;
  else if (profiler === false) profilerWhy = `the server runs without its profiler${prof?.evidence ? ` (${prof.evidence})` : ''}`;
  else profilerWhy = 'whether the profiler is on is not known';
  return { gpusBusy, gpusWhy, profiler, profilerWhy };
}

/** The record Run All keeps of a plan, so that an interrupted one can go on where it stopped. */
export interface RunAllRecord {
  version: 1;
  target: string;
  createdAt: string;
  updatedAt: string;
  /** running: a step is going or the plan was cut off; finished: every step ran; stopped: a step failed or was declined and the plan ended there. */
  state: 'running' | 'finished' | 'stopped';
  macro: MacroOptions;
  steps: PlanStep[];
  omitted: OmittedStep[];
  /** The server change (its folder under .inference-bench/server) that holds the original recipe, once a step changed the server. */
  serverChange?: string;
}

/** The first step of the first measurement not done: where a plan goes on. undefined when nothing is left. */
export function resumePoint(record: RunAllRecord): number | undefined {
  // The probe only planned the rest: a resume goes on with the measurements whatever it did.
  const open = record.steps.findIndex((s) => s.phase !== 'probe' && s.status !== 'done' && s.status !== 'skipped');
  if (open < 0) return undefined;
  // A run's server steps go with it: a micro cut off after its stop starts again from the stop.
  const phase = record.steps[open].phase;
  return record.steps.findIndex((s) => s.phase === phase);
}

/** Whether a record is of a plan that did not get to its end (and is worth offering to resume). */
export function unfinished(record: RunAllRecord | undefined): record is RunAllRecord {
  return !!record && record.state !== 'finished' && resumePoint(record) !== undefined && resumePoint(record)! > 0;
}

/** The record with every step of `phase` set to `status` (and its run). */
export function markPhase(record: RunAllRecord, phase: RunnablePhase, status: PlanStepStatus, runId?: string, now = new Date()): RunAllRecord {
  return {
    ...record,
    updatedAt: now.toISOString(),
    steps: record.steps.map((s) => (s.phase === phase ? { ...s, status, ...(runId ? { runId } : {}) } : s)),
  };
}

/** The phases still to run from step `from` on, in order. */
export function phasesFrom(record: RunAllRecord, from: number): RunnablePhase[] {
  const out: RunnablePhase[] = [];
  for (const s of record.steps.slice(from)) if (!out.includes(s.phase)) out.push(s.phase);
  return out;
}
