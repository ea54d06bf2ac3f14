// Micro points as the user reads them: the headline, and tables for the findings document, the
// results view and the terminal. Points are the agent's `micro.point` payloads (see agent/infbench_agent/micro/command.py).
import { AllReducePoint, GemmPoint, GpuPeak } from '../../shared/results';
import { MicroKind } from '../../remote/agentProtocol';
import { ALLREDUCE_BANDWIDTH_COLUMNS, ALLREDUCE_SIZE_COLUMNS, ALLREDUCE_TABLE_ID } from '../../shared/microTables';
import { formatBytes, ResultTable, TableCell, TableColumn } from '../../shared/table';
import { finite } from '../../shared/finite';

export type MicroPoint = Record<string, unknown> & { kind: MicroKind };

const ofKind = (points: MicroPoint[], kind: MicroPoint['kind']) => points.filter((p) => p.kind === kind);

/** Shapes in the order the agent measured them, each with its points sorted by M. */
function gemmsByShape(points: MicroPoint[]): Map<string, MicroPoint[]> {
  const byShape = new Map<string, MicroPoint[]>();
  for (const p of ofKind(points, 'gemm')) {
    const name = String(p.shape);
    if (!byShape.has(name)) byShape.set(name, []);
    byShape.get(name)!.push(p);
  }
  for (const list of byShape.values()) list.sort((a, b) => Number(a.m) - Number(b.m));
  return byShape;
}

/** "moe.gate_up M=1: 7.6 µs, 23% of peak bandwidth · launch 10.1 µs eager, 1.1 µs from a CUDA graph". */
export function microHeadline(points: MicroPoint[]): string | undefined {
  const parts: string[] = [];
  const byShape = gemmsByShape(points);
  const name = [...byShape.keys()].find((s) => s === 'moe.gate_up') ?? [...byShape.keys()].find((s) => /gate_up/.test(s)) ?? [...byShape.keys()][0];
  const first = name ? byShape.get(name)![0] : undefined;
  if (first) {
    const pct = finite(first.pct_peak_bw);
    const share = pct === undefined ? '' : pct > ABOVE_PEAK_PCT ? `, ${ABOVE_PEAK_WORDS}` : `, ${pct.toFixed(0)}% of peak bandwidth`;
    parts.push(`${name} M=${first.m}: ${Number(first.us).toFixed(1)} µs${share}`);
  }
  const launch = ofKind(points, 'launch');
  const eager = launch.find((p) => p.mode === 'eager');
  const graph = launch.find((p) => p.mode === 'graph');
  if (eager && graph)
    parts.push(`launch ${Number(eager.us_per_kernel).toFixed(1)} µs eager vs ${Number(graph.us_per_kernel).toFixed(1)} µs per kernel from a CUDA graph`);
  const ar = ofKind(points, 'allreduce').filter((p) => p.source === 'decode');
  const arFirst = ar.find((p) => p.mode === 'graph') ?? ar[0];
  if (arFirst && Number(arFirst.world_size) > 1)
    parts.push(`all-reduce ${formatBytes(Number(arFirst.bytes))} ${Number(arFirst.us).toFixed(1)} µs (${arFirst.mode})`);
  return parts.length ? parts.join(' · ') : undefined;
}

/** One row per shape, one column per M: the pivot a reader scans for where time stops being flat. */
function pivot(points: MicroPoint[], id: string, title: string, cell: (p: MicroPoint) => TableCell, digits: number, note?: string): ResultTable | undefined {
  const byShape = gemmsByShape(points);
  if (!byShape.size) return undefined;
  const ms = [...new Set(ofKind(points, 'gemm').map((p) => Number(p.m)))].sort((a, b) => a - b);
  const columns: TableColumn[] = [
    { key: 'shape', label: 'shape', align: 'left' },
    { key: 'nk', label: 'N×K', align: 'left' },
    ...ms.map((m) => ({ key: `m${m}`, label: `M=${m}`, digits })),
  ];
  const rows = [...byShape.entries()].map(([shape, list]) => {
    const row: Record<string, TableCell> = { shape, nk: `${list[0].n}×${list[0].k}` };
    for (const p of list) row[`m${p.m}`] = cell(p);
    return row;
  });
  return { id, title, columns, rows, note };
}

// A GEMM faster than the measured peak read its operands from a cache (a CPU's caches hold the
// rotated weight copies; the peak is a copy through memory): its percentage of that peak would mislead.
const ABOVE_PEAK_PCT = 105;
const ABOVE_PEAK_WORDS = 'faster than the measured memory peak (operands in cache)';

function withPercent(value: unknown, pct: unknown, digits: number): TableCell {
  const v = finite(value);
  if (v === undefined) return null;
  const p = finite(pct);
  if (p === undefined) return v.toFixed(digits);
  return p > ABOVE_PEAK_PCT ? `${v.toFixed(digits)} (cached)` : `${v.toFixed(digits)} (${p.toFixed(0)}%)`;
}

/** What the expert-parallel budget needs of the model: layers that all-reduce, and MoE layers that would all-to-all. */
export interface CollectiveModel {
  layers: number | null;
  moe_layers: number | null;
  top_k: number | null;
  hidden: number;
}

export function microTables(
  points: MicroPoint[],
  context: { kernel?: string; timing?: string; allreduceNote?: string; model?: CollectiveModel } = {},
): ResultTable[] {
  const tables: ResultTable[] = [];
  const peaks = ofKind(points, 'peak');
  if (peaks.length) {
    tables.push({
      id: 'micro-peak',
      title: 'Measured ceilings of this device',
      columns: [
        { key: 'what', label: 'what', align: 'left' },
        { key: 'value', label: 'measured', digits: 2 },
        { key: 'unit', label: 'unit', align: 'left' },
        { key: 'us', label: 'µs', digits: 1 },
        { key: 'note', label: 'how', align: 'left' },
      ],
      rows: peaks.map((p) => ({
        what: p.what === 'copy' ? 'memory bandwidth (copy)' : `compute (${String(p.dtype ?? '')} matmul)`,
        value: p.what === 'copy' ? finite(p.tbps) : finite(p.tflops),
        unit: p.what === 'copy' ? 'TB/s' : 'TFLOP/s',
        us: finite(p.us),
        note: String(p.note ?? ''),
      })),
      note: 'The GEMM percentages below are of these measured figures, not of the datasheet.',
    });
  }
  const gemmNote = [context.kernel ? `Kernel: ${context.kernel}.` : '', context.timing ?? ''].filter(Boolean).join(' ');
  const time = pivot(points, 'micro-gemm-us', 'GEMM time (µs) by shape and M', (p) => finite(p.us), 1, gemmNote || undefined);
  if (time) tables.push(time);
  const bw = pivot(
    points,
    'micro-gemm-bw',
    'GEMM achieved TB/s (% of measured peak bandwidth)',
    (p) => withPercent(p.tbps, p.pct_peak_bw, 2),
    2,
    `Bytes: weights + activations + output, read or written once per call. "cached": ${ABOVE_PEAK_WORDS.replace(' (operands in cache)', '')}, so the operands stayed in a cache.`,
  );
  if (bw) tables.push(bw);
  const flops = pivot(points, 'micro-gemm-flops', 'GEMM achieved TFLOP/s (% of measured peak compute)', (p) => withPercent(p.tflops, p.pct_peak_flops, 1), 1);
  if (flops) tables.push(flops);

  // One host's all-reduce, then a cluster's collectives by scope (across hosts, within one).
  // One process all-reduces with nobody: its times are a copy's, and a table of them measures nothing.
  const single = ofKind(points, 'allreduce').filter((p) => p.scope === undefined && Number(p.world_size) !== 1);
  if (single.length) tables.push(collectiveTable(single, ALLREDUCE_TABLE_ID, allreduceTitle(single[0]), [ALLREDUCE_NOTE, context.allreduceNote ?? '']));
  for (const scope of SCOPES) {
    const ar = ofKind(points, 'allreduce').filter((p) => p.scope === scope);
    if (ar.length) tables.push(collectiveTable(ar, `${ALLREDUCE_TABLE_ID}-${scope}`, allreduceTitle(ar[0]), [ALLREDUCE_NOTE]));
  }
  for (const scope of SCOPES) {
    const a2a = ofKind(points, 'alltoall').filter((p) => p.scope === scope);
    if (a2a.length) tables.push(collectiveTable(a2a, `micro-alltoall-${scope}`, allreduceTitle(a2a[0]).replace('All-reduce', 'All-to-all'), [ALLTOALL_NOTE]));
  }
  const budget = expertParallelBudget(points, context.model);
  if (budget) tables.push(budget);

  const launch = ofKind(points, 'launch');
  if (launch.length) {
    tables.push({
      id: 'micro-launch',
      title: 'Kernel launch overhead (one-element add)',
      columns: [
        { key: 'mode', label: 'mode', align: 'left' },
        { key: 'wall', label: 'µs per kernel (wall)', digits: 2 },
        { key: 'gpu', label: 'µs per kernel (GPU)', digits: 2 },
        { key: 'cpu', label: 'CPU µs per launch', digits: 3 },
        { key: 'kernels', label: 'kernels', digits: 0 },
      ],
      rows: launch.map((p) => ({
        mode: p.mode === 'graph' ? 'CUDA graph replay' : 'eager',
        wall: finite(p.us_per_kernel),
        gpu: finite(p.gpu_us_per_kernel),
        cpu: finite(p.cpu_us_per_launch),
        kernels: finite(p.kernels),
      })),
      note: String(launch[0].note ?? ''),
    });
  }
  return tables;
}

const SCOPES = ['inter-node', 'intra-node'] as const;
const ALLREDUCE_NOTE = 'busbw = algbw × 2(n−1)/n as nccl-tests; bandwidths from the graph time where there is one. Decode sizes are M × hidden × 2 bytes.';
const ALLTOALL_NOTE =
  "busbw = algbw × (n−1)/n as nccl-tests' alltoall; bytes are one rank's whole buffer. Decode sizes: each rank holds ⌈M / n⌉ of the step's M tokens " +
  '(data-parallel attention, as expert-parallel deployments run) and sends each to its top-k experts: ⌈M / n⌉ × top-k × hidden × 2 bytes, once to dispatch and once to combine per MoE layer.';

function allreduceTitle(p: MicroPoint): string {
  const n = Number(p.world_size);
  const where = p.scope === 'inter-node' ? ` across ${String(p.nodes)} hosts` : p.scope === 'intra-node' ? ' within one host' : '';
  return `All-reduce${where} (${String(p.backend)}, ${n} ${n === 1 ? 'process' : 'processes'}, ${String(p.dtype)})`;
}

/** Times of one collective by size: eager and CUDA-graph side by side, with the decode M each size stands for. */
function collectiveTable(list: MicroPoint[], id: string, title: string, notes: string[]): ResultTable {
  const bySize = new Map<number, { eager?: MicroPoint; graph?: MicroPoint }>();
  for (const p of list) {
    const size = Number(p.bytes);
    const entry = bySize.get(size) ?? {};
    entry[p.mode === 'graph' ? 'graph' : 'eager'] = p;
    bySize.set(size, entry);
  }
  const rows = [...bySize.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([size, e]) => {
      const best = e.graph ?? e.eager!;
      const any = (e.eager ?? e.graph)!;
      const ms = Array.isArray(any.decode_m) && any.decode_m.length > 1 ? any.decode_m.join(', ') : (finite(any.m) ?? null);
      return {
        size: formatBytes(size),
        bytes: size,
        m: ms,
        eager_us: finite(e.eager?.us),
        graph_us: finite(e.graph?.us),
        algbw: finite(best.algbw_gbps),
        busbw: finite(best.busbw_gbps),
      };
    });
  return {
    id,
    title,
    columns: [
      ...ALLREDUCE_SIZE_COLUMNS,
      { key: 'm', label: 'decode M', digits: 0 },
      { key: 'eager_us', label: 'eager µs', digits: 1 },
      { key: 'graph_us', label: 'graph µs', digits: 1 },
      ...ALLREDUCE_BANDWIDTH_COLUMNS,
    ],
    rows,
    note: notes.filter(Boolean).join(' '),
  };
}

/** The time of a collective at decode M: the graph time where there is one (servers decode from graphs). */
function decodeTime(list: MicroPoint[], m: number): number | undefined {
  const at = list.filter((p) => (Array.isArray(p.decode_m) ? p.decode_m.includes(m) : p.m === m));
  return finite((at.find((p) => p.mode === 'graph') ?? at[0])?.us);
}

/**
 * Would expert parallelism help? Per decode step at each M: tensor parallelism all-reduces twice per
 * layer (after attention and after the MLP); expert parallelism all-to-alls twice per MoE layer
 * (dispatch and combine). Both from this run's measured times across the hosts.
 */
export function expertParallelBudget(points: MicroPoint[], model: CollectiveModel | undefined): ResultTable | undefined {
  if (!model?.layers || !model.moe_layers) return undefined;
  const scope = points.some((p) => p.scope === 'inter-node') ? 'inter-node' : 'intra-node';
  const ar = ofKind(points, 'allreduce').filter((p) => p.scope === scope && p.source === 'decode');
  const a2a = ofKind(points, 'alltoall').filter((p) => p.scope === scope && p.source === 'decode');
  if (!ar.length || !a2a.length) return undefined;
  const ms = [...new Set(ar.flatMap((p) => (Array.isArray(p.decode_m) ? (p.decode_m as number[]) : [Number(p.m)])))].sort((a, b) => a - b);
  const rows = ms.flatMap((m) => {
    const arUs = decodeTime(ar, m);
    const a2aUs = decodeTime(a2a, m);
    if (arUs === undefined || a2aUs === undefined) return [];
    const tp = (2 * model.layers! * arUs) / 1000;
    const ep = (2 * model.moe_layers! * a2aUs) / 1000;
    return [{ m, tp_ms: tp, ep_ms: ep, ratio: ep / tp }];
  });
  if (!rows.length) return undefined;
  const n = Number(ar[0].world_size);
  return {
    id: 'micro-ep-budget',
    title: `Collectives per decode step: tensor-parallel all-reduce vs expert-parallel all-to-all (${n} rank${n === 1 ? '' : 's'}, ${scope === 'inter-node' ? 'across hosts' : 'one host'})`,
    columns: [
      { key: 'm', label: 'decode M', digits: 0 },
      { key: 'tp_ms', label: `TP all-reduce ms (2 × ${model.layers} layers)`, digits: 3 },
      { key: 'ep_ms', label: `EP all-to-all ms (2 × ${model.moe_layers} MoE layers)`, digits: 3 },
      { key: 'ratio', label: 'EP / TP', digits: 2 },
    ],
    rows,
    note:
      `Measured times at each M's message size (graph time where there is one) × calls per step. TP: M × ${model.hidden} × 2 bytes per all-reduce; ` +
      `EP: ⌈M / ${n}⌉ tokens × top-${model.top_k ?? '?'} × ${model.hidden} × 2 bytes per rank, dispatch and combine. Attention and expert GEMMs not included.`,
  };
}

/** The typed lists the results view draws (GEMM, all-reduce and a cluster's all-to-all charts, the bandwidth line). */
export function microChartData(
  points: MicroPoint[],
  gpu?: string,
): { gemm: GemmPoint[]; allreduce: AllReducePoint[]; alltoall?: AllReducePoint[]; peak: GpuPeak } {
  const gemm = ofKind(points, 'gemm').map((p) => ({
    shape: String(p.shape),
    m: Number(p.m),
    n: Number(p.n),
    k: Number(p.k),
    time_us: Number(p.us),
    tbps: finite(p.tbps),
    tflops: finite(p.tflops),
    backend: typeof p.kernel === 'string' ? p.kernel : undefined,
  }));
  const allreduce = chartPoints(ofKind(points, 'allreduce'));
  const alltoall = chartPoints(ofKind(points, 'alltoall'));
  const copy = ofKind(points, 'peak').find((p) => p.what === 'copy');
  return { gemm, allreduce, ...(alltoall.length ? { alltoall } : {}), peak: { gpu, memory_tbps: copy ? finite(copy.tbps) : undefined } };
}

/** A collective's points as a chart draws them: a cluster's widest scope (across hosts), graph times where there are. */
function chartPoints(all: MicroPoint[]): AllReducePoint[] {
  const scope = all.some((p) => p.scope === 'inter-node') ? 'inter-node' : all.some((p) => p.scope === undefined) ? undefined : 'intra-node';
  const list = all.filter((p) => p.scope === scope);
  // vLLM decodes from CUDA graphs, so the graph-captured time is the one to draw where there is one.
  const hasGraph = list.some((p) => p.mode === 'graph');
  return list
    .filter((p) => !hasGraph || p.mode === 'graph')
    .map((p) => ({
      size_bytes: Number(p.bytes),
      time_us: Number(p.us),
      algbw_gbps: finite(p.algbw_gbps),
      busbw_gbps: Number(p.busbw_gbps),
      world_size: finite(p.world_size),
    }));
}
