import * as path from 'node:path';
import * as vscode from 'vscode';
import { RunFolder } from '../../core/runs/runFolder';
import { analyzeTracesInWorker } from '../../core/trace/analyzeInWorker';
import { RunSummary } from '../../shared/results';
import { RunController } from '../runs/runController';
import { viewableRun } from '../../core/trace/profileView';
import { readSettings, workspaceRoot } from '../settings';

const TARGET_LABEL = 'trace files';

/**
 * Analyze Trace File…: break local Kineto traces (one per rank, .json or .json.gz) down by kernel
 * category per decode step, in worker threads, with no server or target. The result becomes a
 * profile run (saved in the workspace when one is open) shown in the results and kernel views.
 */
export async function analyzeTraceCommand(
  controller: RunController,
  log: vscode.LogOutputChannel,
  show: (runId: string) => void,
  arg?: unknown,
): Promise<RunSummary | undefined> {
  let files: string[];
  if (arg instanceof vscode.Uri) files = [arg.fsPath];
  else if (Array.isArray(arg) && arg.every((a) => typeof a === 'string')) files = arg as string[];
  else {
    const picked = await vscode.window.showOpenDialog({
      title: 'Analyze Trace File: pick one trace per rank',
      canSelectMany: true,
      openLabel: 'Analyze',
      filters: { 'Kineto traces': ['json', 'gz'], 'All files': ['*'] },
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    if (!picked?.length) return undefined;
    files = picked.map((u) => u.fsPath);
  }
  const root = workspaceRoot();
  const folder = root ? RunFolder.create(root, 'profile', TARGET_LABEL, { traces: files }) : undefined;
  const base: RunSummary = {
    id: folder?.info.id ?? `trace-${Date.now()}`,
    phase: 'profile',
    target: TARGET_LABEL,
    startedAt: folder?.info.startedAt ?? new Date().toISOString(),
    status: 'running',
    headline: `analysing ${files.length} trace${files.length === 1 ? '' : 's'}…`,
  };
  // A running run stays live: it is there to show before publish returns.
  void controller.publish(base);
  show(base.id);
  const abort = new AbortController();
  try {
    const breakdown = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Inference Bench: analysing ${files.map((f) => path.basename(f)).join(', ')}`,
        cancellable: true,
      },
      async (progress, token) => {
        token.onCancellationRequested(() => abort.abort());
        const read = new Map<string, { done: number; total: number }>();
        let lastPct = 0;
        return analyzeTracesInWorker(files, readSettings().traceAnalysis, {
          signal: abort.signal,
          onProgress: (file, done, total) => {
            read.set(file, { done, total });
            const all = [...read.values()];
            const pct = Math.floor(
              (100 * all.reduce((s, r) => s + r.done, 0)) /
                Math.max(
                  1,
                  all.reduce((s, r) => s + r.total, 0),
                ),
            );
            if (pct > lastPct) progress.report({ increment: pct - lastPct, message: `${pct}% of the file bytes read` });
            lastPct = Math.max(lastPct, pct);
          },
        });
      },
    );
    folder?.writeResult(breakdown);
    folder?.finish('completed');
    for (const w of breakdown.warnings) log.warn(`trace analysis: ${w}`);
    const done = viewableRun({ ...base, status: 'completed', headline: breakdown.headline, profile: breakdown as unknown as RunSummary['profile'] });
    await controller.publish(done);
    return done;
  } catch (err) {
    const cancelled = abort.signal.aborted;
    const reason = cancelled ? 'Cancelled by the user.' : err instanceof Error ? err.message : String(err);
    folder?.finish(cancelled ? 'cancelled' : 'failed', reason);
    await controller.publish({ ...base, status: cancelled ? 'cancelled' : 'failed', reason, headline: undefined });
    if (!cancelled) {
      log.error(`trace analysis failed: ${reason}`);
      void vscode.window.showErrorMessage(`Inference Bench: could not analyse the trace: ${reason}`);
    }
    return undefined;
  }
}
