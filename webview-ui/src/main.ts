import { Chart, registerables } from 'chart.js';
import type { HostToWebview, ResultsSnapshot, WebviewToHost } from '../../src/shared/protocol';
import type { RunSummary } from '../../src/shared/results';

Chart.register(...registerables);

declare function acquireVsCodeApi(): { postMessage(m: WebviewToHost): void; getState(): unknown; setState(s: unknown): void };
const vscode = acquireVsCodeApi();

let snapshot: ResultsSnapshot = { runs: [] };
const charts: Chart[] = [];

function themeColor(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text; // textContent: nothing from a run is ever parsed as HTML
  if (className) e.className = className;
  return e;
}

function render(): void {
  const app = document.getElementById('app')!;
  charts.splice(0).forEach((c) => c.destroy());
  app.replaceChildren();
  const run = snapshot.runs.find((r) => r.id === snapshot.selectedRunId) ?? snapshot.runs[0];
  if (!run) {
    app.append(el('p', 'No runs yet. Run a phase from the Inference Bench sidebar or the command palette.', 'empty'));
    return;
  }
  const header = el('h2', `${run.phase} · ${run.target}${run.simulated ? ' (simulator)' : ''}`);
  app.append(header, el('p', `${new Date(run.startedAt).toLocaleString()} · ${run.status}${run.reason ? ` — ${run.reason}` : ''}`, 'meta'));
  if (run.macro) renderMacro(app, run);
}

function renderMacro(app: HTMLElement, run: RunSummary): void {
  const levels = run.macro!.levels;
  const canvas = el('canvas');
  canvas.id = 'macro-throughput';
  canvas.width = 800;
  canvas.height = 320;
  app.append(el('h3', 'Output throughput vs concurrency'), canvas);
  const fg = themeColor('--vscode-foreground', '#ccc');
  const accent = themeColor('--vscode-charts-blue', '#3794ff');
  charts.push(new Chart(canvas, {
    type: 'line',
    data: {
      labels: levels.map((l) => String(l.max_concurrency ?? l.request_rate)),
      datasets: [{ label: 'output tok/s', data: levels.map((l) => l.output_throughput), borderColor: accent, backgroundColor: accent }],
    },
    options: { animation: false, responsive: false, color: fg, scales: { x: { ticks: { color: fg }, title: { display: true, text: 'concurrency', color: fg } }, y: { ticks: { color: fg } } } },
  }));
  const table = el('table');
  const head = el('tr');
  ['concurrency', 'completed', 'output tok/s', 'req/s'].forEach((h) => head.append(el('th', h)));
  table.append(head);
  for (const l of levels) {
    const row = el('tr');
    [String(l.max_concurrency ?? ''), String(l.completed), l.output_throughput.toFixed(1), l.request_throughput.toFixed(2)].forEach((c) => row.append(el('td', c)));
    table.append(row);
  }
  app.append(table);
}

window.addEventListener('message', (event: MessageEvent<HostToWebview>) => {
  const m = event.data;
  switch (m.type) {
    case 'snapshot':
      snapshot = m.snapshot;
      break;
    case 'runUpdated': {
      const i = snapshot.runs.findIndex((r) => r.id === m.run.id);
      if (i >= 0) snapshot.runs[i] = m.run;
      else snapshot.runs.unshift(m.run);
      break;
    }
    case 'select':
      snapshot.selectedRunId = m.runId;
      snapshot.compareRunId = m.compareRunId;
      break;
    case 'reply':
      return;
  }
  vscode.setState({ selectedRunId: snapshot.selectedRunId });
  render();
});

vscode.postMessage({ type: 'ready' });
