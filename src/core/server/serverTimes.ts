import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ServerTimes } from '../campaign/runAllPlan';
import { ServerChangeRecord, serverChangesRoot } from './serverChange';

/**
 * The target's last stop and starts, from its server change records (change.json keeps each step's
 * time; the adopting status call's result, the agent's estimate from the host's last start).
 */
export function serverTimes(workspace: string, target: string): ServerTimes {
  const root = serverChangesRoot(workspace);
  const times: ServerTimes = {};
  if (!existsSync(root)) return times;
  // Newest first: the first time found of each kind is the last one.
  for (const name of readdirSync(root).sort().reverse()) {
    let record: ServerChangeRecord;
    try {
      record = JSON.parse(readFileSync(join(root, name, 'change.json'), 'utf8')) as ServerChangeRecord;
    } catch {
      continue;
    }
    if (record.target !== target) continue;
    // The agent's own estimate when the change was adopted: the host's last start of the original recipe.
    if (times.agentEstimateS === undefined) {
      try {
        const estimate = (JSON.parse(readFileSync(join(root, name, '1-status', 'result.json'), 'utf8')) as { estimate_s?: number | null }).estimate_s;
        if (typeof estimate === 'number' && estimate > 0) times.agentEstimateS = estimate;
      } catch {
        // a change adopted before the agent kept its starts, or one cut off at its first step
      }
    }
    const h = record.history;
    for (let i = h.length - 1; i > 0; i--) {
      const s = (Date.parse(h[i].at) - Date.parse(h[i - 1].at)) / 1000;
      if (!Number.isFinite(s) || s < 0) continue;
      if (h[i - 1].state === 'stopping' && h[i].state === 'stopped') times.stopS ??= s;
      if (h[i - 1].state === 'starting' && h[i].state === 'restored') times.startOriginalS ??= s;
      if (h[i - 1].state === 'starting' && h[i].state === 'changed') times.startProfilerS ??= s;
    }
  }
  return times;
}
