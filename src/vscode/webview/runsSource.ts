import * as vscode from 'vscode';
import { RunSummary } from '../../shared/results';

/** What the views need of the run controller: every run, and a signal when one changes. */
export interface RunsSource {
  /** Every run, the stored ones as last read. */
  runs(): RunSummary[];
  /** Reads the stored runs again without blocking (runs made by the CLI, folders removed), then gives every run. */
  refreshRuns(): Promise<RunSummary[]>;
  run(id: string): RunSummary | undefined;
  readonly onDidChangeRun: vscode.Event<RunSummary>;
  /** A run started or finished. */
  readonly onDidChangeRuns: vscode.Event<void>;
}
