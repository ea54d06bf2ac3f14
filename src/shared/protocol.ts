// The one contract between the extension host and the results webview.
// One discriminated union per direction; messages that expect a reply carry a request id.
import type { RunSummary } from './results';

/** Everything a results view needs to draw from scratch. The host owns it; the view only renders. */
export interface ResultsSnapshot {
  runs: RunSummary[];
  /** The run shown; a second one is overlaid for comparison. */
  selectedRunId?: string;
  compareRunId?: string;
}

export type HostToWebview =
  | { type: 'snapshot'; snapshot: ResultsSnapshot }
  /** A run gained or changed data while it goes (a sweep level finished, a micro point arrived). */
  | { type: 'runUpdated'; run: RunSummary }
  | { type: 'select'; runId: string; compareRunId?: string }
  | { type: 'reply'; requestId: number; ok: boolean; error?: string };

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'selectRun'; runId: string; compareRunId?: string }
  | { type: 'exportCsv'; requestId: number; fileName: string; csv: string }
  | { type: 'exportPng'; requestId: number; fileName: string; dataUrl: string }
  | { type: 'insertTable'; requestId: number; markdown: string }
  /** The view's own ui state, so it survives a reload. */
  | { type: 'error'; message: string };
