// Multi-turn levels (the agent's --dataset-name multi_turn, agent/infbench_agent/macro/conversations.py): how long
// the context grew, what the first and the last turn waited for their first token, and the prefix-cache hit
// rate the server's own counters gave. A prefix cache shortens the later turns' TTFT: their context is
// mostly the turn before, prompt and answer.
import { MacroLevelSummary } from '../../shared/results';
import { ResultTable } from '../../shared/table';
import { finite } from '../../shared/finite';
import { serverState } from './serverState';
import { levelRowLabel } from './tables';

interface TurnFigures {
  turn: number;
  completed: number;
  mean_context_tokens: number | null;
  mean_ttft_ms: number | null;
}

/** A multi-turn level's own figures, as the agent's turn_summary() writes them. */
export interface MultiTurnSummary {
  conversations: number | null;
  conversations_started: number;
  turns: number;
  mean_context_tokens: number | null;
  max_context_tokens: number | null;
  by_turn: TurnFigures[];
}

export function multiTurn(level: MacroLevelSummary): MultiTurnSummary | undefined {
  const m = level.multi_turn as MultiTurnSummary | undefined;
  return m && Array.isArray(m.by_turn) ? m : undefined;
}

/** Per multi-turn level: conversations, mean and largest context, TTFT of the first and the last turn, the hit rate. */
export function conversationTable(levels: readonly MacroLevelSummary[]): ResultTable | undefined {
  const rows = levels
    .filter((l) => multiTurn(l))
    .map((l) => {
      const m = multiTurn(l)!;
      const answered = m.by_turn.filter((t) => t.completed > 0);
      const hits = finite(serverState(l)?.summary.prefix_cache_hit_rate);
      return {
        level: levelRowLabel(l),
        conversations: m.conversations_started,
        turns: m.turns,
        context_mean: finite(m.mean_context_tokens),
        context_max: finite(m.max_context_tokens),
        ttft_first: finite(answered[0]?.mean_ttft_ms),
        ttft_last: answered.length > 1 ? finite(answered[answered.length - 1].mean_ttft_ms) : undefined,
        hit_rate: hits === undefined ? undefined : hits * 100,
      };
    });
  if (!rows.length) return undefined;
  return {
    id: 'macro-conversations',
    title: 'Multi-turn conversations per load level',
    columns: [
      { key: 'level', label: 'Load', align: 'left' },
      { key: 'conversations', label: 'Conversations', digits: 0 },
      { key: 'turns', label: 'Turns', digits: 0 },
      { key: 'context_mean', label: 'Context mean (tokens)', digits: 0 },
      { key: 'context_max', label: 'Context max (tokens)', digits: 0 },
      { key: 'ttft_first', label: 'TTFT mean, first turn (ms)', digits: 1 },
      { key: 'ttft_last', label: 'TTFT mean, last turn (ms)', digits: 1 },
      { key: 'hit_rate', label: 'Prefix-cache hit %', digits: 1 },
    ],
    rows,
    note: "Context: the prompt tokens each turn sent, as the server counted them (the whole history). The hit rate is the server's own, from its /metrics counters over the level.",
  };
}
