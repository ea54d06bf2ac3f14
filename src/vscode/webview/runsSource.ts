import * as vscode from 'vscode';
import { RunSummary } from '../../shared/results';

/** What the views need of the run controller: every run, and a signal when one changes. */
export interface RunsSource {
  runs(): RunSummary[];
  run(id: string): RunSummary | undefined;
  readonly onDidChangeRun: vscode.Event<RunSummary>;
  /** A run started or finished. */
  readonly onDidChangeRuns: vscode.Event<void>;
}
