// The one contract between the extension host and the results webview.
// One discriminated union per direction; messages that expect a reply carry a request id.
import type { ProfileSummary, RunSummary } from './results';
import type { ResultTable } from './table';
import type { DecodeBudgetView } from './budget';

/** Everything a results view needs to draw from scratch. The host owns it; the view only renders. */
export interface ResultsSnapshot {
  runs: RunSummary[];
  /** The run shown; a second one is overlaid for comparison. */
  selectedRunId?: string;
  compareRunId?: string;
  /** The decode-step budget waterfall from the newest macro, micro and profile runs (src/core/explain). */
  budget?: DecodeBudgetView;
  /**
   * Runs sent without their bulky parts (each request of a macro run, raw micro points) to keep the
   * snapshot small; the view asks for one in full by selecting it (`selectRun`).
   */
  trimmedRunIds?: string[];
}

export type HostToWebview =
  | { type: 'snapshot'; snapshot: ResultsSnapshot }
  /** A run gained or changed data while it goes (a sweep level finished, a micro point arrived). */
  | { type: 'runUpdated'; run: RunSummary }
  | { type: 'select'; runId: string; compareRunId?: string }
  /** To the kernel-breakdown side view: the profile to inspect (undefined when there is none yet). */
  | { type: 'breakdown'; breakdown?: BreakdownView }
  /** The decode-step budget changed (a macro, micro or profile run finished). */
  | { type: 'budget'; budget?: DecodeBudgetView }
  /** What changed between the shown run (A) and the compared one (B) beyond noise, in sentences (src/core/compare), or why they cannot be compared. */
  | { type: 'verdict'; runId: string; compareRunId: string; lines: string[]; flagged: number }
  /** Scroll to a part of the view and give it focus (Show Decode-Step Budget opens the view at the budget). */
  | { type: 'reveal'; section: 'budget' }
  | Reply;

/** The host's answer to a request of the view, by its request id: done, or why not. */
export interface Reply {
  type: 'reply';
  requestId: number;
  ok: boolean;
  error?: string;
}

/** What the kernel-breakdown side view draws: one profile run. */
export interface BreakdownView {
  runId: string;
  title: string;
  profile: ProfileSummary;
}

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'selectRun'; runId: string; compareRunId?: string }
  | { type: 'exportCsv'; requestId: number; fileName: string; csv: string }
  /** A chart as a PNG `data:` URL (canvas.toDataURL); the host decodes it and saves it where the user picks. */
  | { type: 'exportPng'; requestId: number; fileName: string; dataUrl: string }
  /** Save a macro run's requests as a Chrome trace (Perfetto, chrome://tracing); the host builds it from the run folder and asks where. */
  | { type: 'exportTrace'; requestId: number; runId: string }
  /** Insert a table into the findings document at the cursor; the host renders it as markdown. */
  | { type: 'insertTable'; requestId: number; table: ResultTable }
  /** Open the kernel-breakdown side view on a profile run. */
  | { type: 'inspectBreakdown'; runId: string }
  /** How long the last render took, for the benchmark and the UI tests. */
  | { type: 'rendered'; points: number; ms: number }
  | { type: 'error'; message: string };

/** The messages of a view that the host answers with a `Reply`. */
export type WebviewRequest = Extract<WebviewToHost, { requestId: number }>;
/** The messages of a view that need no answer. */
export type WebviewNotice = Exclude<WebviewToHost, { requestId: number }>;

export function isWebviewRequest(message: WebviewToHost): message is WebviewRequest {
  return 'requestId' in message;
}

/** State a results view keeps across reloads (through getState/setState); the data itself comes from the host. */
export interface ResultsViewState {
  selectedRunId?: string;
  compareRunId?: string;
}
