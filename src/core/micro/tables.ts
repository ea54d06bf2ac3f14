// Micro points as the user reads them: the headline, and tables for the findings document, the
// results view and the terminal. Points are the agent's `micro.point` payloads (see agent/infbench_agent/micro.py).
import { AllReducePoint, GemmPoint, GpuPeak } from '../../shared/results';
import { ALLREDUCE_BANDWIDTH_COLUMNS, ALLREDUCE_SIZE_COLUMNS, ALLREDUCE_TABLE_ID } from '../../shared/microTables';
import { formatBytes, ResultTable, TableCell, TableColumn } from '../../shared/table';

export type MicroPoint = Record<string, unknown> & { kind: 'gemm' | 'allreduce' | 'launch' | 'peak' };

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
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
    const pct = num(first.pct_peak_bw);
    parts.push(`${name} M=${first.m}: ${Number(first.us).toFixed(1)} µs${pct !== undefined ? `, ${pct.toFixed(0)}% of peak bandwidth` : ''}`);
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

function withPercent(value: unknown, pct: unknown, digits: number): TableCell {
  const v = num(value);
  if (v === undefined) return null;
  const p = num(pct);
  return p === undefined ? v.toFixed(digits) : `${v.toFixed(digits)} (${p.toFixed(0)}%)`;
}

export function microTables(points: MicroPoint[], context: { kernel?: string; timing?: string; allreduceNote?: string } = {}): ResultTable[] {
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
        value: p.what === 'copy' ? num(p.tbps) : num(p.tflops),
        unit: p.what === 'copy' ? 'TB/s' : 'TFLOP/s',
        us: num(p.us),
        note: String(p.note ?? ''),
      })),
      note: 'The GEMM percentages below are of these measured figures, not of the datasheet.',
    });
  }
  const gemmNote = [context.kernel ? `Kernel: ${context.kernel}.` : '', context.timing ?? ''].filter(Boolean).join(' ');
  const time = pivot(points, 'micro-gemm-us', 'GEMM time (µs) by shape and M', (p) => num(p.us), 1, gemmNote || undefined);
  if (time) tables.push(time);
  const bw = pivot(
    points,
    'micro-gemm-bw',
    'GEMM achieved TB/s (% of measured peak bandwidth)',
    (p) => withPercent(p.tbps, p.pct_peak_bw, 2),
    2,
    'Bytes: weights + activations + output, read or written once per call.',
  );
  if (bw) tables.push(bw);
  const flops = pivot(points, 'micro-gemm-flops', 'GEMM achieved TFLOP/s (% of measured peak compute)', (p) => withPercent(p.tflops, p.pct_peak_flops, 1), 1);
  if (flops) tables.push(flops);

  const ar = ofKind(points, 'allreduce');
  if (ar.length) {
    const bySize = new Map<number, { eager?: MicroPoint; graph?: MicroPoint }>();
    for (const p of ar) {
      const size = Number(p.bytes);
      const entry = bySize.get(size) ?? {};
      entry[p.mode === 'graph' ? 'graph' : 'eager'] = p;
      bySize.set(size, entry);
    }
    const first = ar[0];
    const rows = [...bySize.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([size, e]) => {
        const best = e.graph ?? e.eager!;
        return {
          size: formatBytes(size),
          bytes: size,
          m: num((e.eager ?? e.graph)?.m) ?? null,
          eager_us: num(e.eager?.us),
          graph_us: num(e.graph?.us),
          algbw: num(best.algbw_gbps),
          busbw: num(best.busbw_gbps),
        };
      });
    tables.push({
      id: ALLREDUCE_TABLE_ID,
      title: `All-reduce (${String(first.backend)}, ${String(first.world_size)} ${Number(first.world_size) === 1 ? 'process' : 'processes'}, ${String(first.dtype)})`,
      columns: [
        ...ALLREDUCE_SIZE_COLUMNS,
        { key: 'm', label: 'decode M', digits: 0 },
        { key: 'eager_us', label: 'eager µs', digits: 1 },
        { key: 'graph_us', label: 'graph µs', digits: 1 },
        ...ALLREDUCE_BANDWIDTH_COLUMNS,
      ],
      rows,
      note: [
        'busbw = algbw × 2(n−1)/n as nccl-tests; bandwidths from the graph time where there is one. Decode sizes are M × hidden × 2 bytes.',
        context.allreduceNote ?? '',
      ]
        .filter(Boolean)
        .join(' '),
    });
  }

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
        wall: num(p.us_per_kernel),
        gpu: num(p.gpu_us_per_kernel),
        cpu: num(p.cpu_us_per_launch),
        kernels: num(p.kernels),
      })),
      note: String(launch[0].note ?? ''),
    });
  }
  return tables;
}

/** The typed lists the results view draws (GEMM and all-reduce charts, the bandwidth line). */
export function microChartData(points: MicroPoint[], gpu?: string): { gemm: GemmPoint[]; allreduce: AllReducePoint[]; peak: GpuPeak } {
  const gemm = ofKind(points, 'gemm').map((p) => ({
    shape: String(p.shape),
    m: Number(p.m),
    n: Number(p.n),
    k: Number(p.k),
    time_us: Number(p.us),
    tbps: num(p.tbps),
    tflops: num(p.tflops),
    backend: typeof p.kernel === 'string' ? p.kernel : undefined,
  }));
  // vLLM decodes from CUDA graphs, so the graph-captured time is the one to draw where there is one.
  const ar = ofKind(points, 'allreduce');
  const hasGraph = ar.some((p) => p.mode === 'graph');
  const allreduce = ar
    .filter((p) => !hasGraph || p.mode === 'graph')
    .map((p) => ({
      size_bytes: Number(p.bytes),
      time_us: Number(p.us),
      algbw_gbps: num(p.algbw_gbps),
      busbw_gbps: Number(p.busbw_gbps),
      world_size: num(p.world_size),
    }));
  const copy = ofKind(points, 'peak').find((p) => p.what === 'copy');
  return { gemm, allreduce, peak: { gpu, memory_tbps: copy ? num(copy.tbps) : undefined } };
}
