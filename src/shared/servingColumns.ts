// The columns of the full serving table, as `vllm bench serve` reports a level: one list for the run
// folder's table (core) and the results view's (webview), so the two never drift apart.
import type { TableColumn } from './table';

/** Latency (ms: mean, p50, p99; E2EL mean and p99) and throughput columns, keyed by the level summary's field names. */
export const SERVING_FIGURE_COLUMNS: readonly TableColumn[] = [
  { key: 'mean_ttft_ms', label: 'TTFT mean ms', digits: 1 },
  { key: 'p50_ttft_ms', label: 'TTFT p50', digits: 1 },
  { key: 'p99_ttft_ms', label: 'TTFT p99', digits: 1 },
  { key: 'mean_tpot_ms', label: 'TPOT mean ms', digits: 2 },
  { key: 'p50_tpot_ms', label: 'TPOT p50', digits: 2 },
  { key: 'p99_tpot_ms', label: 'TPOT p99', digits: 2 },
  { key: 'mean_itl_ms', label: 'ITL mean ms', digits: 2 },
  { key: 'p50_itl_ms', label: 'ITL p50', digits: 2 },
  { key: 'p99_itl_ms', label: 'ITL p99', digits: 2 },
  { key: 'mean_e2el_ms', label: 'E2EL mean ms', digits: 1 },
  { key: 'p99_e2el_ms', label: 'E2EL p99', digits: 1 },
  { key: 'output_throughput', label: 'Output tok/s', digits: 1 },
  { key: 'total_token_throughput', label: 'Total tok/s', digits: 1 },
  { key: 'request_throughput', label: 'Req/s', digits: 2 },
];

export const GOODPUT_COLUMN: TableColumn = { key: 'request_goodput', label: 'Goodput req/s', digits: 2 };
