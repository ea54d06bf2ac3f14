import * as vscode from 'vscode';
import { checkServerHealth, serverHeldBy } from '../../core/campaign/serverHealth';
import { pendingServerChanges } from '../../core/server/serverChange';
import { Target } from '../../core/config/target';
import { Disposable } from '../disposable';
import { TargetStates } from '../views/targetState';
import { ConnectionManager } from './connectionManager';

// Often enough that a server killed meanwhile shows as such within seconds; one short command each time.
const WATCH_MS = 5000;

/**
 * Watches each connected target's server with a health check through the target's own open
 * connection (it never opens one; a connected host stays open until Disconnect), so that the sidebar says "server not
 * answering" soon after the server stops, and clears it when it answers again.
 */
export class ServerWatch extends Disposable {
  private readonly checking = new Set<string>();

  constructor(
    private readonly connections: Pick<ConnectionManager, 'openChannelOf'>,
    private readonly states: TargetStates,
    private readonly targets: () => Target[],
    private readonly log: vscode.LogOutputChannel,
    /** The workspace whose server change records say when the tool itself has a server down. */
    private readonly workspace: () => string | undefined = () => undefined,
  ) {
    super();
    const timer = setInterval(() => this.checkAll(), WATCH_MS);
    this._register({ dispose: () => clearInterval(timer) });
  }

  private checkAll(): void {
    for (const target of this.targets()) if (!this.checking.has(target.name)) void this.check(target);
  }

  private async check(target: Target): Promise<void> {
    const channel = this.connections.openChannelOf(target);
    if (!channel) return;
    this.checking.add(target.name);
    try {
      const { transport, agent } = await channel;
      const health = await checkServerHealth(transport, agent.python, target.serverUrl);
      // A server the tool stopped or is restarting (a planned stop for micro, a restart with the profiler) is said so, not as a fault.
      const workspace = health.answering ? undefined : this.workspace();
      const held = workspace ? serverHeldBy(pendingServerChanges(workspace, target.name)) : undefined;
      const down = health.answering || held ? undefined : health.detail;
      const shown = this.states.get(target.name);
      if (shown?.serverDown === down && shown?.serverHeld === held) return;
      if (held) this.log.info(`${target.name}: the server does not answer: ${held} by Inference Bench`);
      else if (down) this.log.warn(`${target.name}: the server stopped answering: ${down}`);
      else this.log.info(`${target.name}: the server answers again at ${target.serverUrl}`);
      this.states.set(target.name, { serverDown: down, serverHeld: held });
    } catch (err) {
      // A connection going away meanwhile: its own state says so.
      this.log.debug(`${target.name}: health check: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.checking.delete(target.name);
    }
  }
}
