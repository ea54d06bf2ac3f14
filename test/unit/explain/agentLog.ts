import { readFileSync } from 'node:fs';

/** The result event of an agent event log (one JSON event per line, as the agent prints them). */
export function agentResult(file: string): Record<string, unknown> {
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; result?: Record<string, unknown> });
  return lines.find((e) => e.type === 'result')!.result!;
}
