import { markLevel } from '../macro/levelFlags';
import { MacroLevelSummary } from '../../shared/results';

interface LevelEvent {
  type: 'macro.level';
  level: number;
  partial?: boolean;
  summary: MacroLevelSummary;
}

interface ServerEvent {
  type: 'server';
  server: Record<string, unknown>;
}

const isLevel = (e: unknown): e is LevelEvent =>
  (e as LevelEvent)?.type === 'macro.level' && typeof (e as LevelEvent).level === 'number' && typeof (e as LevelEvent).summary === 'object';
const isServer = (e: unknown): e is ServerEvent => (e as ServerEvent)?.type === 'server' && typeof (e as ServerEvent).server === 'object';

/**
 * The result.json of a macro run whose process died before writing one, from its event log: every
 * level that finished, and the one under way marked cut short with how far it got (as a run stopped
 * in order keeps them). Undefined when no level had reported anything.
 */
export function keptMacroResult(events: unknown[], reason: string): Record<string, unknown> | undefined {
  const finals = new Map<number, MacroLevelSummary>();
  const running = new Map<number, MacroLevelSummary>();
  let server: Record<string, unknown> = {};
  for (const e of events) {
    if (isServer(e)) server = { ...server, ...e.server };
    if (!isLevel(e)) continue;
    if (e.partial) running.set(e.level, e.summary);
    else {
      running.delete(e.level);
      finals.set(e.level, e.summary);
    }
  }
  if (!finals.size && !running.size) return undefined;
  const levels = [...finals.entries()].map(([n, l]) => [n, markLevel(l, { stopped: 'interrupted' })] as const);
  for (const [n, l] of running) {
    const planned = typeof l.num_prompts === 'number' ? l.num_prompts : undefined;
    const done = (l.completed ?? 0) + (l.failed ?? 0);
    levels.push([n, { ...markLevel(l), partial: true, cut: { reason: 'interrupted', done, planned } }]);
  }
  levels.sort((a, b) => a[0] - b[0]);
  return { levels: levels.map(([, l]) => l), server, partial: true, status: 'interrupted', reason };
}
