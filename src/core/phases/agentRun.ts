import { AgentCommand, AgentEvent, AgentResults, ErrorCode, helloProblem } from '../../remote/agentProtocol';
import { agentArgv, DeployedAgent } from '../../remote/agentDeploy';
import { apiKeyArgs } from '../../remote/agentOptionArgs';
import { AgentEventParser } from '../../remote/eventStream';
import { Transport } from '../../remote/transport';
import { AgentLog, RunStatus } from '../runs/runFolder';
import { stopOf } from '../runs/runStop';
import { RunFailure } from '../../shared/results';
import { Hinted, RemedyWords, sayHinted } from '../../shared/remedy';
import { cleanEventText } from '../../shared/printable';

// The agent's stdin stays open and carries an empty line this often; an agent that hears nothing for
// HEARTBEAT_TIMEOUT_S (its controller gone without a word, as in a network partition) stops itself.
const HEARTBEAT_MS = 2000;
export const HEARTBEAT_TIMEOUT_S = 15;
// What a shell answers for a command it cannot run: 127 not found, 126 found but not executable.
const NOT_FOUND = 127;
const NOT_EXECUTABLE = 126;

export interface AgentRunOutcome<C extends AgentCommand = AgentCommand> {
  status: RunStatus;
  /** The agent's final `result` event, if it got that far. */
  result?: AgentResults[C];
  /** Every event received, in order (also on disk in the run's events.jsonl). */
  events: AgentEvent[];
  errors: (RunFailure & { code: ErrorCode })[];
  reason?: string;
  /** The error the reason was made from, as data (absent when the reason is not the agent's error). */
  failure?: RunFailure;
}

/**
 * Runs one agent command for a run folder: every event is appended to the event log the moment it
 * arrives and re-emitted for live views. The outcome tells completed from failed, cancelled and
 * interrupted (the connection or the process went away before `done`).
 */
export async function runAgentCommand<C extends AgentCommand>(
  transport: Transport,
  agent: DeployedAgent,
  command: C,
  args: readonly string[],
  run: AgentLog,
  options: {
    signal?: AbortSignal;
    onEvent?: (event: AgentEvent) => void;
    env?: Record<string, string>;
    stdin?: string;
    apiKey?: string;
    /** Leave the run's status to the caller (a run that goes on with more agent commands). */
    leaveOpen?: boolean;
    /** The front end's words for a remedy, for the reason (the CLI's flags when absent). */
    words?: RemedyWords;
  } = {},
): Promise<AgentRunOutcome<C>> {
  const events: AgentEvent[] = [];
  // The key goes over stdin: an environment variable or argument would show in the host's process list.
  // Whatever comes back is scrubbed of it too (a server echoing the header, an error quoting it).
  const key = options.apiKey || undefined;
  const scrub = (text: string) => (key && text.includes(key) ? text.split(key).join('REDACTED') : text);
  if (key) {
    args = [...args, ...apiKeyArgs(command)];
    options = { ...options, stdin: `${key}\n${options.stdin ?? ''}` };
  }
  const errors: AgentRunOutcome['errors'] = [];
  let result: AgentResults[C] | undefined;
  let done: boolean | undefined;
  // An agent of another build or schema, or on a Python older than the agent supports: stopped at its hello.
  let mismatch: Hinted | undefined;
  const where = `${agent.python} on ${transport.label}`;
  const refuse = (problem: Hinted | undefined) => {
    if (!problem || mismatch) return;
    mismatch = problem;
    void handle.cancel();
  };
  const parser = new AgentEventParser(
    (parsed, raw) => {
      const line = scrub(raw);
      const event = line === raw ? parsed : cleanEventText(JSON.parse(line) as AgentEvent);
      try {
        run.appendEvent(line);
      } catch {
        // Nothing more can be kept (a full disk): stop the agent rather than measure into the void.
        void handle.cancel();
      }
      events.push(event);
      if (event.type === 'hello') refuse(helloProblem(event, command, where));
      // The result's shape follows the command, which the hello has just been checked to match.
      if (event.type === 'result') result = event.result as AgentResults[C];
      if (event.type === 'error')
        errors.push({ code: event.code, message: event.message, hint: event.hint, ...(event.remedies ? { remedies: event.remedies } : {}) });
      if (event.type === 'done') done = event.ok;
      options.onEvent?.(event);
    },
    (noise) => run.appendNoise(scrub(`[stdout] ${noise}\n`)),
    (hello) => refuse(helloProblem(hello, command, where)),
  );
  const handle = transport.exec(agentArgv(agent, command, args, ['--heartbeat-timeout', String(HEARTBEAT_TIMEOUT_S)]), {
    signal: options.signal,
    env: options.env,
    stdin: options.stdin,
    keepStdinOpen: true,
  });
  const heartbeat = setInterval(() => handle.stdin.write('\n'), HEARTBEAT_MS);
  let stderrTail = '';
  handle.stdout.on('data', (chunk: Buffer) => parser.push(chunk));
  handle.stderr.on('data', (chunk: Buffer) => {
    const text = scrub(chunk.toString('utf8'));
    stderrTail = (stderrTail + text).slice(-2000);
    run.appendNoise(text);
  });
  let exit: Awaited<typeof handle.done>;
  try {
    exit = await handle.done;
  } finally {
    clearInterval(heartbeat);
    handle.stdin.end();
  }
  parser.end();

  let status: RunStatus;
  let reason: string | undefined;
  let failure: RunFailure | undefined;
  const said = stderrTail.trim().split('\n').at(-1)?.trim();
  const storage = run.storageProblem;
  if (storage) {
    status = 'failed';
    reason = `${storage.said(options.words)} The run was stopped there; the ${run.readEvents().length} events before it are kept whole in events.jsonl.`;
  } else if (mismatch) {
    status = 'failed';
    reason = sayHinted(mismatch, options.words);
  } else if (options.signal?.aborted) {
    const stop = stopOf(options.signal);
    status = stop.status;
    reason = `${stop.message}; the results received so far are kept.`;
  } else if (exit.error && events.length === 0) {
    // The command never started (for example the SSH connection could not be made).
    status = 'failed';
    reason = exit.error.message;
  } else if (events.length === 0 && (exit.code === NOT_FOUND || exit.code === NOT_EXECUTABLE)) {
    status = 'failed';
    reason = sayHinted(
      {
        message: `The Python interpreter "${agent.python}" ${exit.code === NOT_FOUND ? 'was not found' : 'could not be run'} on ${transport.label}${said ? ` (${said})` : ''}.`,
        code: 'python_not_found',
        hint: `Pass the path of a Python 3 there with {0} (for example /usr/bin/python3 or the server's venv), or set the target's "python" setting.`,
        remedies: [{ kind: 'flag', flag: '--python' }],
      },
      options.words,
    );
  } else if (done === true) {
    status = 'completed';
  } else if (done === false) {
    status = 'failed';
    const first = errors[0];
    reason = first ? sayHinted(first, options.words) : `The agent reported a failure (exit code ${exit.code}).`;
    failure = first;
  } else {
    status = 'interrupted';
    reason = exit.lostConnection
      ? `The connection to ${transport.label} dropped mid-run; ${events.length} events received before it are kept.`
      : `The agent stopped before finishing (exit code ${exit.code ?? 'none'}${exit.signal ? `, signal ${exit.signal}` : ''}${events.length === 0 && said ? `: ${said}` : ''}); ${events.length} events received before it are kept.`;
  }
  if (result && !run.writeResult(result) && status === 'completed') {
    failure = undefined;
    status = 'failed';
    reason = `${run.storageProblem?.said(options.words) ?? 'result.json could not be written.'} The events are in events.jsonl.`;
  }
  if (!options.leaveOpen) run.finish(status, reason);
  return { status, result, events, errors, reason, failure };
}
