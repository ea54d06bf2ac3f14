// The Nsight Systems half of the profiler phase, after the capture: the server under nsys is stopped
// (nsys writes its report as it exits), the agent exports the report to SQLite and reads it on the host
// (agent/infbench_agent/profile/command.py --nsys-report), and its records (every kernel with its step and NVTX
// module) and Kineto traces come back into the run folder. The records fold into the layer and module
// breakdown (nsysModules.ts); the Kineto traces go through the trace analyzer for the kernel categories.

import { createReadStream, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { sayHinted } from '../../shared/remedy';
import { ResultTable } from '../../shared/table';
import { agentOptionArgs } from '../../remote/agentOptionArgs';
import { ProfileCapture, ServerRecipe } from '../../remote/agentProtocol';
import { FindingsUpdate, PhaseContext } from '../campaign/phaseContext';
import { RunFolder, RunStatus } from '../runs/runFolder';
import { analyzeTracesInWorker } from '../trace/analyzeInWorker';
import { breakdownTables } from '../trace/format';
import { findingSentence, NsysBreakdown, NsysModuleAnalyzer, NsysRecord } from '../trace/nsysModules';
import { TraceAnalysisOptions, TraceBreakdown } from '../trace/types';
import { runAgentCommand } from './agentRun';
import { agreementSentence, agreementTable, ProfilerAgreement } from './profilerAgreement';

/** The server under Nsight Systems, as the profile run drives it. */
export interface NsysServer {
  /** The recipe that runs (nsys profile … the server's command). */
  running: ServerRecipe;
  /** The report nsys writes on the host when the server stops (BASE.nsys-rep). */
  report: string;
  /** The nsys on the host that runs it, and that exports the report. */
  nsys: string;
  /**
   * Stops the server under nsys (so that nsys writes its report) and puts the original back. Called
   * once the capture is done; if it is not, the same happens when `body` ends.
   */
  stop: () => Promise<void>;
}

/** What the host's reading of the report gave, in the run folder. */
export interface NsysRead {
  modules: NsysBreakdown;
  trace: TraceBreakdown;
  /** The records and Kineto traces, as copied into the run folder. */
  files: string[];
  report: string;
  reportBytes: number;
}

interface RemoteFile {
  path: string;
  bytes: number;
}

interface NsysCollected {
  report: RemoteFile;
  sqlite: RemoteFile;
  records: RemoteFile;
  kineto: RemoteFile[];
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/** Stops the server under nsys, has the agent export and read the report on the host, and analyses what comes back. */
export async function collectNsys(
  ctx: PhaseContext,
  run: RunFolder,
  nsys: NsysServer,
  publish: (stage: string, message: string) => void,
  analysis: TraceAnalysisOptions = {},
): Promise<NsysRead | { status: RunStatus; failure: string; files: string[] }> {
  const failed = (failure: string, files: string[] = [], status: RunStatus = 'failed') => ({ status, failure, files });
  publish('stop', `stopping the server under nsys on ${ctx.target.name} so that nsys writes ${nsys.report}`);
  try {
    await nsys.stop();
  } catch (err) {
    return failed(
      `Stopping the server under nsys failed: ${err instanceof Error ? err.message : String(err)}. The report, if nsys wrote it, is ${nsys.report} on the host.`,
    );
  }
  const args = agentOptionArgs('profile', { nsysReport: nsys.report, nsys: nsys.nsys });
  let collected: NsysCollected | undefined;
  const outcome = await runAgentCommand(ctx.transport, ctx.agent, 'profile', args, run.nodeLog('nsys-report'), {
    signal: ctx.signal,
    words: ctx.words,
    onEvent: (event) => {
      if (event.type === 'profile.status') {
        ctx.log.info(`profile: ${event.message}`);
        publish(event.stage, event.message);
      } else if (event.type === 'log') ctx.log[event.level](`profile: ${sayHinted(event, ctx.words)}`);
      else if (event.type === 'error') ctx.log.error(`profile on ${ctx.target.name}: ${sayHinted(event, ctx.words)}`);
      else if (event.type === 'result') collected = (event.result as ProfileCapture & { nsys?: NsysCollected }).nsys;
    },
  });
  if (outcome.status !== 'completed' || !collected) {
    const first = outcome.errors[0];
    return failed(
      `Reading the Nsight Systems report on ${ctx.transport.label} failed: ${first ? sayHinted(first, ctx.words) : (outcome.reason ?? outcome.status)}`,
      [],
      outcome.status === 'cancelled' ? 'cancelled' : 'failed',
    );
  }
  const got = collected;
  const folder = join(run.dir, 'nsys');
  mkdirSync(join(folder, 'kineto'), { recursive: true });
  const records = join(folder, basename(got.records.path));
  const kineto: string[] = [];
  try {
    publish('fetch', `fetching the report's records (${mb(got.records.bytes)}) from ${ctx.transport.label}`);
    await ctx.transport.download(got.records.path, records);
    for (const [i, k] of got.kineto.entries()) {
      if (ctx.signal?.aborted) return failed('Cancelled while fetching the Nsight Systems records.', [records, ...kineto], 'cancelled');
      publish('fetch', `fetching Kineto trace ${i + 1} of ${got.kineto.length} (${mb(k.bytes)}) from ${ctx.transport.label}`);
      const to = join(folder, 'kineto', basename(k.path));
      await ctx.transport.download(k.path, to);
      kineto.push(to);
    }
  } catch (err) {
    return failed(
      `Copying the Nsight Systems records from ${ctx.transport.label} failed: ${err instanceof Error ? err.message : String(err)}. They are on the host beside ${got.report.path}; read its .sqlite there with infbench analyze.`,
      [records, ...kineto],
    );
  }
  const files = [records, ...kineto];
  try {
    publish('analyze', `reading the layer and module of ${basename(records)}`);
    const modules = await foldRecords(records, analysis);
    publish('analyze', `analysing ${kineto.length} Kineto trace(s) of the same steps`);
    const trace = await analyzeTracesInWorker(kineto, analysis, { signal: ctx.signal });
    return { modules, trace, files, report: got.report.path, reportBytes: got.report.bytes };
  } catch (err) {
    if (ctx.signal?.aborted) return failed('Cancelled during the analysis; the records are in the run folder (nsys/).', files, 'cancelled');
    return failed(`Analysing the Nsight Systems records failed: ${err instanceof Error ? err.message : String(err)}`, files);
  }
}

/** Folds a records file (one JSON record per line, as the agent's reader writes it) into the module breakdown, streaming. */
export async function foldRecords(path: string, analysis: TraceAnalysisOptions = {}): Promise<NsysBreakdown> {
  const analyzer = new NsysModuleAnalyzer(analysis.extraFamilies);
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) if (line) analyzer.onRecord(JSON.parse(line) as NsysRecord);
  return analyzer.finish();
}

/** The module table of the first rank, as the findings document and the results view show it. */
export function nsysModuleTables(b: NsysBreakdown): ResultTable[] {
  const r = b.ranks[0];
  if (!r) return [];
  const tables: ResultTable[] = [
    {
      id: 'profile-nsys-modules',
      title: 'Where a decode step goes, by module (Nsight Systems, NVTX ranges)',
      columns: [
        { key: 'module', label: 'module', align: 'left' },
        { key: 'ms', label: 'ms per step', align: 'right', digits: 3 },
        { key: 'pct', label: '% of step', align: 'right', digits: 1 },
        { key: 'kernels', label: 'kernels per step', align: 'right', digits: 1 },
      ],
      rows: r.modules.map((m) => ({ module: m.module, ms: m.msPerStep, pct: m.sharePct, kernels: m.kernelsPerStep })),
      note: `${r.steps} decode steps on device ${r.device}${r.deviceName ? ` (${r.deviceName})` : ''}; ${r.replayedPct.toFixed(0)}% of kernels replayed from CUDA graphs. A kernel outside every module range is counted as such, never guessed.`,
    },
  ];
  if (r.layers.length)
    tables.push({
      id: 'profile-nsys-layers',
      title: 'By layer',
      columns: [
        { key: 'layer', label: 'layer', align: 'right', digits: 0 },
        { key: 'ms', label: 'ms per step', align: 'right', digits: 3 },
        { key: 'pct', label: '% of step', align: 'right', digits: 1 },
        { key: 'modules', label: 'modules (ms per step)', align: 'left' },
      ],
      rows: r.layers.map((l) => ({
        layer: l.layer,
        ms: l.msPerStep,
        pct: l.sharePct,
        modules: l.modules.map((m) => `${m.module} ${m.msPerStep.toFixed(3)}`).join(', '),
      })),
    });
  return tables;
}

/** The findings section of an nsys profile: the sentence, where the report is, the module and layer tables, then the kernel categories. */
export function nsysFindingsUpdate(
  run: RunFolder,
  summary: { target: string; simulated?: boolean },
  capture: ProfileCapture | undefined,
  read: NsysRead,
  /** The same server's torch profile, where there is one: its categories against this capture's. */
  agreement?: ProfilerAgreement,
): FindingsUpdate {
  const server: Partial<ProfileCapture['server']> = capture?.server ?? {};
  const workload: Partial<ProfileCapture['workload']> = capture?.workload ?? {};
  const who = server.kind ? `${server.kind} ${server.version ?? ''}`.trim() : 'the server';
  const load = workload.concurrency ? `, ${workload.concurrency} request(s) at once × ${workload.output_len} output tokens` : '';
  const lines = [
    `**${findingSentence(read.modules)}**`,
    `Nsight Systems profile of ${who}${server.model ? ` serving \`${server.model}\`` : ''}${load}; the report is ${read.report} on the host (${mb(read.reportBytes)}), read there. Run \`${run.info.id}\`.`,
  ];
  if (summary.simulated) lines.push('⚠ **Simulator**: this report comes from the inference-bench simulator (a known timing model), not a real model server.');
  if (agreement) lines.push(agreementSentence(agreement));
  for (const w of read.modules.warnings) lines.push(`Note: ${w}`);
  return {
    sectionId: `profile-${run.info.id}`,
    heading: `Where the decode step goes, by layer and module — ${summary.target}`,
    lines,
    tables: [...nsysModuleTables(read.modules), ...breakdownTables(read.trace), ...(agreement ? [agreementTable(agreement)] : [])],
  };
}
