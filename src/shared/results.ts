// Result shapes shared by the core, the CLI, the findings document and the webview.
// Macro fields use `vllm bench serve`'s names where the metric is the same.

export type Phase = 'macro' | 'micro' | 'profile' | 'probe';

/** One load level of the macro phase (one concurrency or one request rate). */
export interface MacroLevelSummary {
  max_concurrency: number | null;
  request_rate: number | null;
  completed: number;
  failed: number;
  duration: number;
  total_input_tokens: number;
  total_output_tokens: number;
  request_throughput: number;
  output_throughput: number;
  total_token_throughput: number;
  [metric: string]: unknown;
}

export interface RunSummary {
  id: string;
  phase: Phase;
  target: string;
  startedAt: string;
  status: 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled';
  reason?: string;
  simulated?: boolean;
  /** One line a user reads first: "decode 57.1 tok/s at c=1", "all-reduce 51.5% of a decode step". */
  headline?: string;
  macro?: { levels: MacroLevelSummary[] };
  micro?: { points: Record<string, unknown>[] };
  profile?: Record<string, unknown>;
}
