// What the remote agent prints, one object per line; anything else on its stdout is noise.
// The types come from agent/infbench_agent/events.py through scripts/gen-agent-schema.py (agentSchema.ts).
import {
  AGENT_EVENT_TYPES,
  AGENT_SCHEMA_VERSION,
  AGENT_VERSION,
  AgentCommand,
  AgentEvent,
  CollectiveResult,
  HelloEvent,
  MacroResult,
  MicroResult,
  MIN_PYTHON,
  ProbeResult,
  ProfileCapture,
  ServerControlResult,
} from './agentSchema';
import { Hinted } from '../shared/remedy';

export * from './agentSchema';

/** The `result` event's payload for each command. */
export interface AgentResults {
  probe: ProbeResult;
  macro: MacroResult;
  micro: MicroResult;
  profile: ProfileCapture;
  collective: CollectiveResult;
  server: ServerControlResult;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set<string>(AGENT_EVENT_TYPES);

/** Returns the event if `value` is a well-formed agent event of a schema this build understands. */
export function asAgentEvent(value: unknown): AgentEvent | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { v?: unknown; type?: unknown };
  if (v.v !== AGENT_SCHEMA_VERSION || typeof v.type !== 'string' || !KNOWN_TYPES.has(v.type)) return undefined;
  return value as AgentEvent;
}

/** A `hello` line of another schema version: its fields as far as they can be read, else undefined. */
export function foreignHello(value: unknown): { v: unknown; agent_version?: unknown; python?: unknown } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { v?: unknown; type?: unknown };
  return v.type === 'hello' && v.v !== AGENT_SCHEMA_VERSION ? (v as { v: unknown }) : undefined;
}

/** "3.8.18" → [3, 8, 18]; undefined when it does not start with two numbers. */
function pythonVersion(text: string): number[] | undefined {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

const REBUILD =
  'Rebuild (npm run build) so that the bundled agent is deployed again, or remove the cached agent-*.pyz under ~/.cache/inference-bench on the host.';

/**
 * Why the agent that said this hello cannot be worked with, and what to do; undefined when it can.
 * `where` names the interpreter and host ("python3 on gpu-box").
 */
export function helloProblem(
  hello: HelloEvent | { v: unknown; agent_version?: unknown; python?: unknown },
  command: AgentCommand | string,
  where: string,
): Hinted | undefined {
  if (hello.v !== AGENT_SCHEMA_VERSION) {
    return {
      message:
        `The agent run by ${where} speaks event schema ${String(hello.v)} (agent ${String(hello.agent_version ?? 'of unknown version')}), ` +
        `this build speaks schema ${AGENT_SCHEMA_VERSION} (agent ${AGENT_VERSION}): an agent from another build of Inference Bench answered.`,
      hint: REBUILD,
    };
  }
  const h = hello as HelloEvent;
  if (h.agent_version !== AGENT_VERSION)
    return { message: `The agent run by ${where} is version ${h.agent_version}, this build is ${AGENT_VERSION}.`, hint: REBUILD };
  const py = pythonVersion(h.python);
  if (py && (py[0] < MIN_PYTHON[0] || (py[0] === MIN_PYTHON[0] && py[1] < MIN_PYTHON[1]))) {
    return {
      code: 'python_too_old',
      message: `The agent needs Python ${MIN_PYTHON.join('.')} or newer; ${h.executable || where} is Python ${h.python}.`,
      hint: 'Pass a newer Python there with {0} (for example the server\'s venv), or set the target\'s "python" setting.',
      remedies: [{ kind: 'flag', flag: '--python' }],
    };
  }
  if (h.command !== command)
    return {
      message: `The agent run by ${where} answered for "${h.command}", not "${command}": the agent and this build disagree.`,
      hint: 'Rebuild (npm run build).',
    };
  return undefined;
}
