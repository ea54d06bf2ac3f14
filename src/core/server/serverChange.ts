import { RemedyWords, sayHinted } from '../../shared/remedy';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Target } from '../config/target';
import { Logger } from '../log';
import { AgentLog, writeAtomic } from '../runs/runFolder';
import { AgentEvent, ServerControlResult, ServerIdentity, ServerRecipe, ServerStage } from '../../remote/agentProtocol';
import { DeployedAgent } from '../../remote/agentDeploy';
import { serverArgs } from '../../remote/agentOptionArgs';
import { ServerAction, ServerAgentOptions } from '../../remote/agentOptions';
import { Transport } from '../../remote/transport';
import { AgentRunOutcome, runAgentCommand } from '../phases/agentRun';
import { environmentInWords, outputTarget, recipeDifferences, sameRecipe, startCommand, stopCommand, withUserRecipe } from './recipe';

/** What the server's lifecycle needs of a phase's context. */
export interface ServerContext {
  target: Target;
  transport: Transport;
  agent: DeployedAgent;
  workspace: string;
  log: Logger;
  apiKey?: string;
  /** How the front end says a remedy; the CLI's flags when absent. */
  words?: RemedyWords;
}

/** One step of a change the user is asked about: the exact commands and what they change. */
export interface ServerStep {
  kind: 'stop' | 'restart' | 'restore';
  title: string;
  commands: string[];
  changes: string[];
  /** Seconds the last start of the recipe to be started took on this host, when known. */
  estimateS?: number | null;
}

/** Asks the user; true only on an explicit yes. */
export type Consent = (step: ServerStep) => Promise<boolean>;

/** The server's start-up as it goes: a stage reached, or one line of its log. */
export interface ServerProgress {
  stage?: ServerStage;
  line?: string;
  message: string;
  elapsedS?: number;
  estimateS?: number | null;
  /** starting: the new process's pid and start time. */
  identity?: ServerIdentity;
}

/** Where a change stands; anything but `adopted` and `restored` means the original is not running. */
export type ServerChangeState = 'adopted' | 'stopping' | 'stopped' | 'starting' | 'changed' | 'restoring' | 'restored' | 'failed';

/** change.json: kept before anything is stopped, updated at every step, so a lost connection leaves it. */
export interface ServerChangeRecord {
  target: string;
  url: string;
  purpose: string;
  state: ServerChangeState;
  /** The recipe as adopted before any change: what restoring starts again. */
  original: ServerRecipe;
  /** What runs now, when the tool started it. */
  running?: ServerRecipe;
  /**
   * The environment of a shell on the host when the recipe was adopted (redacted), so that a start is
   * shown as typed into that shell: the variables it sets and unsets. Absent in records of older versions.
   */
  shellEnv?: Record<string, string>;
  history: { at: string; state: ServerChangeState; note?: string }[];
}

export class ServerControlError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

const STOP_TIMEOUT_S = 60;
// How long the tool waits for a stop or start the user does by hand, and how often it looks.
const MANUAL_WAIT_S = 3600;
const MANUAL_POLL_MS = 10_000;

/** The folder of the workspace's server changes, `<workspace>/.inference-bench/server`. */
export function serverChangesRoot(workspace: string): string {
  return join(workspace, '.inference-bench', 'server');
}

/** Changes of this target's server that were not put back (a lost connection, a crash), newest first. */
export function pendingServerChanges(workspace: string, target: string): { dir: string; record: ServerChangeRecord }[] {
  const root = serverChangesRoot(workspace);
  if (!existsSync(root)) return [];
  const out: { dir: string; record: ServerChangeRecord }[] = [];
  for (const name of readdirSync(root).sort().reverse()) {
    try {
      const record = JSON.parse(readFileSync(join(root, name, 'change.json'), 'utf8')) as ServerChangeRecord;
      if (record.target === target && record.state !== 'adopted' && record.state !== 'restored') out.push({ dir: join(root, name), record });
    } catch {
      // not a change folder, or one being written
    }
  }
  return out;
}

/**
 * One change of a target's server, from adopting its recipe to putting the original back. Every
 * agent call it makes is logged in its folder (events.jsonl per step), and change.json says where the
 * change stands, so that Cancel, a failure or the next connection can restore the original.
 */
export class ServerChange {
  private steps = 0;

  private constructor(
    private readonly ctx: ServerContext,
    readonly dir: string,
    readonly record: ServerChangeRecord,
  ) {}

  /**
   * Adopts the running server's recipe (and, with `profilerDir`, the same recipe with the profiler on)
   * and keeps it in a new change folder before anything is changed.
   */
  static async adopt(
    ctx: ServerContext,
    purpose: string,
    options: { profilerDir?: string; delayIterations?: number; maxIterations?: number; nsys?: string; signal?: AbortSignal } = {},
  ): Promise<{ change: ServerChange; status: ServerControlResult }> {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-').replace('T', '_').replace('Z', '');
    const dir = join(serverChangesRoot(ctx.workspace), `${stamp}-${ctx.target.name.replace(/[^A-Za-z0-9._-]+/g, '_')}`);
    mkdirSync(dir, { recursive: true });
    const pending = new ServerChange(ctx, dir, undefined as unknown as ServerChangeRecord);
    const outcome = await pending.call('status', adoptArgs(ctx.target.serverUrl, options), options.signal);
    const status = outcome.result!;
    if (!status.recipe) {
      throw new ServerControlError(
        `No server process was found behind ${ctx.target.serverUrl} on ${ctx.transport.label}: ` +
          (status.running
            ? 'it answers, but its process is not visible from where the agent runs (another container or user). Run the agent where the server runs (--prefix "docker exec -i NAME"), or stop and start it yourself.'
            : 'nothing answers there. Start the server first.'),
        'no_recipe',
      );
    }
    const user = ctx.target.serverRecipe;
    const record: ServerChangeRecord = {
      target: ctx.target.name,
      url: ctx.target.serverUrl,
      purpose,
      state: 'adopted',
      // The user's recipe, where they wrote one, is what restoring starts; the running process is still the one stopped.
      original: user ? withUserRecipe(status.recipe, user) : status.recipe,
      ...(user ? { running: status.recipe } : {}),
      ...(status.shell_env ? { shellEnv: status.shell_env } : {}),
      history: [{ at: new Date().toISOString(), state: 'adopted' }],
    };
    const change = new ServerChange(ctx, dir, record);
    change.steps = pending.steps;
    change.save('adopted');
    writeAtomic(join(dir, 'original-recipe.json'), JSON.stringify(record.original, null, 2));
    if (user) writeAtomic(join(dir, 'adopted-recipe.json'), JSON.stringify(status.recipe, null, 2));
    return { change, status };
  }

  /** Opens a change a previous session left (for restoring it). */
  static open(ctx: ServerContext, dir: string): ServerChange {
    const change = new ServerChange(ctx, dir, JSON.parse(readFileSync(join(dir, 'change.json'), 'utf8')) as ServerChangeRecord);
    change.steps = readdirSync(dir).filter((name) => /^\d+-/.test(name)).length;
    return change;
  }

  /** The command that starts `recipe`, as typed into a shell on the host (the variables it sets and unsets against that shell). */
  startCommand(recipe: ServerRecipe): string {
    return startCommand(recipe, this.record.shellEnv);
  }

  /** What putting the original back gives it besides its command line: its environment and where its output goes. */
  originalInWords(): string[] {
    const original = this.record.original;
    return [`the original: ${environmentInWords(original, this.record.shellEnv)}`, `the original: ${outputTarget(original)}`];
  }

  /** The consent step for stopping the adopted server. */
  stopStep(): ServerStep {
    const original = this.record.original;
    return {
      kind: 'stop',
      title: `Stop the server on ${this.ctx.target.name} (pid ${original.identity?.pid ?? '?'}) for ${this.record.purpose}, and start it again afterwards`,
      commands: [stopCommand(original, STOP_TIMEOUT_S), this.startCommand(original)],
      changes: [
        'the server does not answer until it is started again',
        ...this.originalInWords(),
        `its original recipe is kept in ${join(this.dir, 'original-recipe.json')}`,
      ],
    };
  }

  /**
   * The consent step for putting the original back (the next connection's offer, `infbench server
   * restore`): the exact commands, the environment and where the output goes, before anything runs.
   */
  restoreStep(): ServerStep {
    const { original, running, purpose, state } = this.record;
    return {
      kind: 'restore',
      title: `Put the original server back on ${this.ctx.target.name} (changed for ${purpose}, now ${state})`,
      commands: [...(running?.identity ? [stopCommand(running, STOP_TIMEOUT_S)] : []), this.startCommand(original)],
      changes: [
        ...(running?.identity ? [`pid ${running.identity.pid} is the server the tool started; it is stopped only if it is still that process`] : []),
        ...this.originalInWords(),
        `the record is ${this.dir}`,
      ],
    };
  }

  /** The consent step for restarting the adopted server as `changed` (the differences are from what runs now). */
  restartStep(changed: ServerRecipe, estimateS?: number | null): ServerStep {
    const original = this.record.original;
    const now = this.record.running ?? original;
    const lasting = sameRecipe(changed, original);
    return {
      kind: 'restart',
      title: `Restart the server on ${this.ctx.target.name} (pid ${now.identity?.pid ?? '?'}) for ${this.record.purpose}${lasting ? '' : ', then put the original back'}`,
      commands: [
        stopCommand(now, STOP_TIMEOUT_S),
        this.startCommand(changed),
        ...(lasting ? [] : [`afterwards, and on Cancel or a failure: ${this.startCommand(original)}`]),
      ],
      changes: [...recipeDifferences(now, changed), `the restarted server: ${outputTarget(changed)}`, ...(lasting ? [] : this.originalInWords())],
      estimateS,
    };
  }

  /** Stops the adopted server (its identity checked on the host); the caller has the user's yes. */
  async stop(onProgress?: (p: ServerProgress) => void): Promise<void> {
    const recipe = this.record.running ?? this.record.original;
    // Pending from here: a stop cut off half-way leaves a record the next connection offers to restore.
    this.save('stopping');
    await this.stopRecipe(recipe, onProgress);
    this.record.running = undefined;
    this.save('stopped');
  }

  private async stopRecipe(recipe: ServerRecipe, onProgress?: (p: ServerProgress) => void): Promise<void> {
    if (!recipe.identity) throw new ServerControlError('The server process has no known identity (pid and start time): nothing was stopped.');
    await this.orManual('down', onProgress, undefined, () => this.stopCall(recipe, onProgress));
  }

  /**
   * Runs `step`; where the agent answers that the server's manager (systemd without the rights, a
   * container seen from the host) is not the tool's to drive, says the commands and watches the
   * server until it is down, or answers again, returning its recipe then.
   */
  private async orManual<T>(
    want: 'down' | 'up',
    onProgress: ((p: ServerProgress) => void) | undefined,
    signal: AbortSignal | undefined,
    step: () => Promise<T>,
  ): Promise<T | ServerRecipe | null> {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof ServerControlError) || err.code !== 'server_manual') throw err;
      onProgress?.({
        stage: want === 'down' ? 'stopping' : 'starting',
        message: `${err.message} Waiting for the server to ${want === 'down' ? 'stop' : 'answer'}…`,
      });
      const deadline = Date.now() + MANUAL_WAIT_S * 1000;
      for (;;) {
        if (signal?.aborted) throw new ServerControlError('Cancelled while waiting for the server.', 'cancelled');
        const status = (await this.call('status', { url: this.record.url })).result!;
        if (want === 'down' && !status.running) return null;
        if (want === 'up' && status.running && status.recipe) return status.recipe;
        if (Date.now() > deadline)
          throw new ServerControlError(
            `The server did not ${want === 'down' ? 'stop' : 'come back'} within ${MANUAL_WAIT_S / 60} minutes. ${err.message}`,
            'manual_timeout',
          );
        await new Promise((r) => setTimeout(r, MANUAL_POLL_MS));
      }
    }
  }

  private async stopCall(recipe: ServerRecipe, onProgress?: (p: ServerProgress) => void): Promise<void> {
    await this.call('stop', stopArgs(recipe), undefined, onProgress);
  }

  /**
   * Starts `recipe` and waits until it answers /health and /v1/models. Cancel (the signal) ends the
   * half-started server on the host; the caller then restores.
   */
  async start(recipe: ServerRecipe, options: { signal?: AbortSignal; onProgress?: (p: ServerProgress) => void } = {}): Promise<ServerControlResult> {
    this.save('starting');
    this.record.running = undefined;
    const onProgress = (p: ServerProgress) => {
      // The new process, known from its first moment: a Cancel or a dropped connection mid-start can stop it by this identity.
      if (p.identity) {
        this.record.running = { ...recipe, identity: p.identity };
        this.save('starting');
      }
      options.onProgress?.(p);
    };
    const done = await this.orManual('up', options.onProgress, options.signal, () =>
      // On stdin: a recipe's whole environment can pass Linux's 128 KiB limit on one argument (and on ssh's one command line).
      this.call('start', { url: recipe.url, recipeStdin: true }, options.signal, onProgress, false, `${JSON.stringify(recipe)}\n`),
    );
    // Started by the user (a manager the tool does not drive): what answers now is adopted as it runs.
    const result: ServerControlResult =
      done && 'result' in done ? done.result! : { action: 'start', recipe: (done as ServerRecipe | null) ?? null, running: true };
    this.record.running = result.recipe ?? undefined;
    this.save(sameRecipe(recipe, this.record.original) ? 'restored' : 'changed');
    return result;
  }

  /**
   * Puts the original back: stops what the tool started (by its identity), then starts the original.
   * Nothing is done when the original already runs. Never takes the run's signal: a restore is not cancelled.
   */
  async restore(onProgress?: (p: ServerProgress) => void): Promise<void> {
    this.save('restoring');
    // A server this change stopped is meant to be gone: the agent's "no recipe adopted, nothing listens" is no warning then.
    const status = (await this.call('status', { url: this.record.url }, undefined, undefined, !this.record.running)).result!;
    const now = status.recipe;
    if (now && sameRecipe(now, this.record.original)) {
      this.record.running = now;
      this.save('restored', 'the original was already running');
      return;
    }
    const running = this.record.running?.identity;
    const ours = running && now?.identity && now.identity.pid === running.pid && now.identity.start_ticks === running.start_ticks;
    if (now && !ours) {
      const message = `pid ${now.identity?.pid ?? '?'} serves ${this.record.url} now and the tool did not start it: it was left alone. Stop it yourself, then restore again.`;
      this.save('failed', message);
      throw new ServerControlError(message, 'not_ours');
    }
    // Said before it runs (also on Cancel or a failure, where no one is asked again): the exact command and where its output goes.
    const command = this.startCommand(this.record.original);
    const words = this.originalInWords().join('; ');
    this.ctx.log.info(`server: putting the original back on ${this.ctx.target.name}: ${command} (${words})`);
    onProgress?.({ message: `putting the original back: ${command} (${words})` });
    try {
      if (now) await this.stopRecipe(now, onProgress);
      await this.start(this.record.original, { onProgress });
    } catch (err) {
      this.save('failed', err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  private save(state: ServerChangeState, note?: string): void {
    if (!this.record) return;
    this.record.state = state;
    if (this.record.history.at(-1)?.state !== state || note) this.record.history.push({ at: new Date().toISOString(), state, ...(note ? { note } : {}) });
    writeAtomic(join(this.dir, 'change.json'), JSON.stringify(this.record, null, 2));
  }

  /** One agent `server` call, logged in its own step folder; a failure throws with the agent's words. */
  private async call(
    action: ServerAction,
    options: ServerAgentOptions,
    signal?: AbortSignal,
    onProgress?: (p: ServerProgress) => void,
    /** The server is expected down (the tool stopped it): the agent's warnings that nothing runs go to the debug log. */
    expectDown = false,
    /** What the agent reads on stdin after the API key's line (the recipe of a start). */
    stdin?: string,
  ): Promise<AgentRunOutcome<'server'>> {
    const step = join(this.dir, `${++this.steps}-${action}`);
    mkdirSync(step, { recursive: true });
    const onEvent = (event: AgentEvent) => {
      if (event.type === 'server.state')
        onProgress?.({ stage: event.stage, message: event.message, elapsedS: event.elapsed_s, estimateS: event.estimate_s, identity: event.identity });
      else if (event.type === 'server.log') onProgress?.({ stage: event.stage, line: event.line, message: event.line });
      else if (event.type === 'log') this.ctx.log[expectDown && event.level === 'warn' ? 'debug' : event.level](`server: ${sayHinted(event, this.ctx.words)}`);
    };
    const outcome = await runAgentCommand(this.ctx.transport, this.ctx.agent, 'server', serverArgs(action, options), new AgentLog(step), {
      signal,
      onEvent,
      apiKey: this.ctx.apiKey,
      words: this.ctx.words,
      stdin,
    });
    if (outcome.status !== 'completed' || !outcome.result) {
      const first = outcome.errors[0];
      const words = first ? sayHinted(first, this.ctx.words) : (outcome.reason ?? outcome.status);
      throw new ServerControlError(`server ${action} on ${this.ctx.transport.label}: ${words}`, first?.code ?? outcome.status);
    }
    return outcome;
  }
}

/**
 * `server status`'s options when a change is adopted: the recipe, and with `profilerDir` the same recipe
 * with the profiler on, bounded by the engine steps given (0 or none: the profiler's own default, not passed).
 */
export function adoptArgs(url: string, options: { profilerDir?: string; delayIterations?: number; maxIterations?: number; nsys?: string }): ServerAgentOptions {
  return {
    url,
    profilerDir: options.profilerDir || undefined,
    profileDelayIterations: options.delayIterations || undefined,
    profileMaxIterations: options.maxIterations || undefined,
    // The same recipe under Nsight Systems, with this nsys or one the agent finds (`auto`).
    nsys: options.nsys || undefined,
  };
}

/** `server stop`'s options: exactly the adopted process (its pid, start time and command line), SIGKILL after STOP_TIMEOUT_S. */
export function stopArgs(recipe: ServerRecipe): ServerAgentOptions {
  const identity = recipe.identity!;
  return { url: recipe.url, pid: identity.pid, startTicks: identity.start_ticks, argvJson: JSON.stringify(recipe.argv), stopTimeout: STOP_TIMEOUT_S };
}
