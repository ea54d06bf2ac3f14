import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  describePlan,
  macroEstimate,
  markPhase,
  PastRun,
  phasesFrom,
  planRunAll,
  planTotal,
  resumePoint,
  RunAllRecord,
  serverNeeds,
  unfinished,
} from '../../../src/core/campaign/runAllPlan';
import { readRunAllRecord, writeRunAllRecord } from '../../../src/core/campaign/runAllRecord';
import { serverTimes } from '../../../src/core/server/serverTimes';

// A probe result as the agent writes it (agent/infbench_agent/probe/command.py), cut to what the plan reads.
function probe(usedMib: number, profiler: boolean | null) {
  return {
    gpus: { available: true, devices: [0, 1].map((index) => ({ index, memory_used_mib: usedMib, memory_total_mib: 143771 })) },
    server: { reachable: true, profiler: { enabled: profiler, evidence: profiler === false ? 'POST /start_profile answered 404' : null } },
  };
}

const past: PastRun[] = [
  { id: 'r-probe', phase: 'probe', status: 'completed', startedAt: '2026-01-01T10:00:00Z', finishedAt: '2026-01-01T10:00:04Z' },
  {
    id: 'r-macro',
    phase: 'macro',
    status: 'completed',
    startedAt: '2026-01-01T10:01:00Z',
    finishedAt: '2026-01-01T10:05:00Z',
    levels: [
      { max_concurrency: 1, request_rate: null, completed: 8, failed: 0, duration: 40 },
      { max_concurrency: 8, request_rate: null, completed: 32, failed: 0, duration: 64 },
    ],
  },
  { id: 'r-micro', phase: 'micro', status: 'completed', startedAt: '2026-01-01T10:06:00Z', finishedAt: '2026-01-01T10:09:00Z' },
  // A failed profile says nothing about how long one takes.
  { id: 'r-profile', phase: 'profile', status: 'failed', startedAt: '2026-01-01T10:10:00Z', finishedAt: '2026-01-01T10:10:02Z' },
];

describe('Run All Phases plans the restarts', () => {
  it('stops the server for micro and starts it with the profiler at once when the GPUs are held and the profiler is off', () => {
    const { steps, omitted } = planRunAll({
      target: 'h200',
      macro: { concurrency: [1, 8] },
      needs: serverNeeds(probe(130000, false)),
      past,
      server: { stopS: 12, startOriginalS: 2160, startProfilerS: 2200 },
    });
    assert.deepEqual(
      steps.map((s) => s.kind),
      ['probe', 'macro', 'stop', 'micro', 'start-profiler', 'profile', 'restore'],
    );
    assert.deepEqual(omitted, []);
    const t = Object.fromEntries(steps.map((s) => [s.kind, s.expectedS]));
    assert.equal(t.probe, 4, 'the last probe took 4 s');
    assert.equal(t.macro, 40 + 64, 'both levels as measured, at the same requests');
    assert.equal(t.micro, 180, 'the last micro run took 3 min');
    assert.equal(t.profile, 120, 'no completed profile: the stated default');
    assert.equal(t['start-profiler'], 2200);
    assert.equal(t.restore, 12 + 2160, 'the restore stops the profiled server and starts the original');
    // No start with the profiler seen yet: the original's start stands in, and says so.
    const first = planRunAll({ target: 'h200', macro: {}, needs: serverNeeds(probe(130000, false)), past, server: { startOriginalS: 2160 } });
    const start = first.steps.find((s) => s.kind === 'start-profiler')!;
    assert.deepEqual([start.expectedS, start.basis], [2160, 'the last start of the original on this target (the profiler adds little to a start)']);
    assert.match(steps.find((s) => s.kind === 'profile')!.basis, /no earlier profile run/);
    assert.deepEqual(planTotal(steps), { seconds: 4 + 104 + 12 + 180 + 2200 + 120 + 2172, unknown: 0 });
  });

  it('leaves the stop and the restart out when the GPUs are free and the profiler is on, and says why', () => {
    const { steps, omitted } = planRunAll({ target: 'h200', macro: {}, needs: serverNeeds(probe(2000, true)), past: [], server: {} });
    assert.deepEqual(
      steps.map((s) => s.kind),
      ['probe', 'macro', 'micro', 'profile'],
    );
    assert.deepEqual(
      omitted.map((o) => o.kind),
      ['stop', 'restart-profiler'],
    );
    assert.match(omitted[0].why, /GPUs are free/);
    assert.match(omitted[1].why, /profiler is already on/);
  });

  it('restarts with the profiler before profile (and restores after) when only the profiler is missing', () => {
    const { steps } = planRunAll({ target: 'h200', macro: {}, needs: serverNeeds(probe(2000, false)), past: [], server: {} });
    assert.deepEqual(
      steps.map((s) => s.kind),
      ['probe', 'macro', 'micro', 'restart-profiler', 'profile', 'restore'],
    );
    // No start ever recorded: the time is said to be unknown, and the total a lower bound.
    assert.equal(steps.find((s) => s.kind === 'restart-profiler')!.expectedS, null);
    const text = describePlan(steps, []).join('\n');
    assert.match(text, /4\. restart the server with the profiler on .*time unknown/);
    assert.match(text, /Expected in all: at least .* \(2 steps of unknown time\)/);
  });

  it('estimates a level no run measured from an assumed decode step, and a timed level by its time', () => {
    const fresh = macroEstimate({ concurrency: [4], requests: 16, outputLen: 100 }, []);
    assert.equal(fresh.expectedS, 4 * 100 * 0.03);
    assert.match(fresh.basis, /c=4 not run before/);
    assert.equal(macroEstimate({ concurrency: [1, 8], durationS: 30 }, past).expectedS, 60);
    // Twice the requests of the stored level: twice its time.
    assert.equal(macroEstimate({ concurrency: [8], requests: 64 }, past).expectedS, 128);
  });

  it('resumes an interrupted plan at the first run not done, its server steps with it', () => {
    const { steps, omitted } = planRunAll({ target: 'h200', macro: {}, needs: serverNeeds(probe(130000, false)), past: [], server: {} });
    let record: RunAllRecord = { version: 1, target: 'h200', createdAt: '', updatedAt: '', state: 'running', macro: {}, steps, omitted };
    // Agreed and cut off before macro ended (the record is written on the yes): it goes on at macro.
    assert.equal(unfinished(record), true);
    assert.equal(resumePoint(record), 1);
    // A probe that failed planned the plan all the same: a cut during macro resumes at macro.
    assert.equal(resumePoint(markPhase(markPhase(record, 'probe', 'failed'), 'macro', 'cancelled')), 1);
    record = markPhase(markPhase(record, 'probe', 'done', 'p1'), 'macro', 'done', 'm1');
    // Cut off during micro, after its stop: the micro run goes again from the stop.
    record = markPhase(record, 'micro', 'cancelled', 'u1');
    assert.equal(unfinished(record), true);
    assert.equal(resumePoint(record), 2);
    assert.equal(record.steps[2].kind, 'stop');
    assert.deepEqual(phasesFrom(record, 2), ['micro', 'profile']);
    record = markPhase(markPhase(record, 'micro', 'done'), 'profile', 'done');
    assert.equal(resumePoint(record), undefined);
    assert.equal(unfinished(record), false);
  });

  it('keeps the record in the runs folder and reads the last stop and starts from the server change records', () => {
    const workspace = mkdtempSync(join(tmpdir(), 'infbench-plan-'));
    const { steps, omitted } = planRunAll({ target: 'a b', macro: {}, needs: serverNeeds(probe(0, true)), past: [], server: {} });
    const record: RunAllRecord = { version: 1, target: 'a b', createdAt: 'x', updatedAt: 'x', state: 'running', macro: { concurrency: [2] }, steps, omitted };
    writeRunAllRecord(workspace, record);
    assert.deepEqual(readRunAllRecord(workspace, 'a b'), record);
    assert.equal(readRunAllRecord(workspace, 'other'), undefined);
    const change = join(workspace, '.inference-bench', 'server', '2026-01-01_10-00-00-000-a_b');
    mkdirSync(change, { recursive: true });
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 10, 0, s)).toISOString();
    writeFileSync(
      join(change, 'change.json'),
      JSON.stringify({
        target: 'a b',
        history: [
          { at: at(0), state: 'adopted' },
          { at: at(1), state: 'stopping' },
          { at: at(6), state: 'stopped' },
          { at: at(10), state: 'starting' },
          { at: at(50), state: 'changed' },
          { at: at(55), state: 'restoring' },
          { at: at(56), state: 'starting' },
          { at: at(86), state: 'restored' },
        ],
      }),
    );
    assert.deepEqual(serverTimes(workspace, 'a b'), { stopS: 5, startProfilerS: 40, startOriginalS: 30 });
    // The agent's estimate, as its status call at the adoption answered it (the host's last start of the recipe).
    mkdirSync(join(change, '1-status'));
    writeFileSync(join(change, '1-status', 'result.json'), JSON.stringify({ action: 'status', recipe: null, estimate_s: 2160 }));
    assert.equal(serverTimes(workspace, 'a b').agentEstimateS, 2160);
  });
});
