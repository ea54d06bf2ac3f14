// Mirror of agent/infbench_agent/events.py: the one definition of what the remote agent prints.
// Every line on the agent's stdout is one of these objects; anything else is noise.

export const AGENT_SCHEMA_VERSION = 1;

interface EventBase {
  v: number;
  /** Wall-clock seconds since the epoch, on the remote host. */
  t: number;
}

export interface HelloEvent extends EventBase { type: 'hello'; agent_version: string; command: string; pid: number; python: string; executable: string }
export interface LogEvent extends EventBase { type: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; message: string }
export interface ProgressEvent extends EventBase { type: 'progress'; done: number; total: number; message?: string }
export interface ProbeEvent extends EventBase { type: 'probe'; result: Record<string, unknown> }
export interface MacroRequestEvent extends EventBase { type: 'macro.request'; level: number; record: Record<string, unknown> }
export interface MacroLevelEvent extends EventBase { type: 'macro.level'; level: number; partial: boolean; summary: Record<string, unknown> }
export interface MicroPointEvent extends EventBase { type: 'micro.point'; kind: 'gemm' | 'allreduce' | 'launch' | 'peak'; point: Record<string, unknown> }
export interface ProfileStatusEvent extends EventBase { type: 'profile.status'; stage: string; message: string }
export interface ProfileTraceEvent extends EventBase { type: 'profile.trace'; path: string; rank: number | null; bytes: number; host?: string; frontend?: boolean }
export interface ResultEvent extends EventBase { type: 'result'; result: Record<string, unknown> }
export interface ErrorEvent extends EventBase { type: 'error'; code: string; message: string; hint?: string }
export interface DoneEvent extends EventBase { type: 'done'; ok: boolean }

export type AgentEvent =
  | HelloEvent | LogEvent | ProgressEvent | ProbeEvent | MacroRequestEvent | MacroLevelEvent
  | MicroPointEvent | ProfileStatusEvent | ProfileTraceEvent | ResultEvent | ErrorEvent | DoneEvent;

export type AgentEventType = AgentEvent['type'];

const KNOWN_TYPES: ReadonlySet<string> = new Set<AgentEventType>([
  'hello', 'log', 'progress', 'probe', 'macro.request', 'macro.level', 'micro.point',
  'profile.status', 'profile.trace', 'result', 'error', 'done',
]);

/** Returns the event if `value` is a well-formed agent event of a schema this build understands. */
export function asAgentEvent(value: unknown): AgentEvent | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { v?: unknown; type?: unknown };
  if (v.v !== AGENT_SCHEMA_VERSION || typeof v.type !== 'string' || !KNOWN_TYPES.has(v.type)) return undefined;
  return value as AgentEvent;
}
