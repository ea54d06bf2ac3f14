// The micro phase's all-reduce table columns, one definition for the findings document
// (src/core/micro/tables.ts) and the results view (webview-ui/src/views/micro.ts).
import type { TableColumn } from './table';

/** The findings document's table: one row per message size, eager and CUDA-graph times side by side. */
export const ALLREDUCE_TABLE_ID = 'micro-allreduce';
/** The results view's table under its all-reduce charts: one row per run and size, for comparing runs. */
export const ALLREDUCE_CHART_TABLE_ID = 'micro-allreduce-timings';

export const ALLREDUCE_SIZE_COLUMNS: readonly TableColumn[] = [
  { key: 'size', label: 'size', align: 'left' },
  { key: 'bytes', label: 'bytes', digits: 0 },
];
/** nccl-tests' algbw and busbw. */
export const ALLREDUCE_BANDWIDTH_COLUMNS: readonly TableColumn[] = [
  { key: 'algbw', label: 'algbw GB/s', digits: 2 },
  { key: 'busbw', label: 'busbw GB/s', digits: 2 },
];
