import * as vscode from 'vscode';
import { Target } from '../../core/config/target';
import { bundledAgentPath, deployAgent, DeployedAgent } from '../../remote/agentDeploy';
import { openTransport } from '../../remote/openTransport';
import { SshHooks } from '../../remote/ssh/connection';
import { Transport } from '../../remote/transport';
import { TargetStates } from '../views/targetState';

export interface Connection {
  transport: Transport;
  agent: DeployedAgent;
  /** Gives the connection back (a shared SSH connection stays open while others use it). */
  release(): Promise<void>;
}

export type Connector = (target: Target, signal: AbortSignal) => Promise<Connection>;

/**
 * Opens a transport to a target (SSH connections are shared per endpoint by the remote layer),
 * asking the user about unknown host keys and passphrases, reporting the state to the sidebar,
 * and deploys the agent there.
 */
export function makeConnector(states: TargetStates, log: vscode.LogOutputChannel): Connector {
  return async (target, signal) => {
    const hooks: SshHooks = {
      async onUnknownHostKey(p) {
        const trust = 'Trust and Connect';
        const pick = await vscode.window.showWarningMessage(
          `Inference Bench: ${p.alias} (${p.hostName}) is not in ${p.knownHostsFile}. Its ${p.keyType} key fingerprint is ${p.fingerprint}. Check it with the machine's owner (ssh-keygen -lf on the host's key) before trusting it.`,
          { modal: true },
          trust,
        );
        return pick === trust;
      },
      askPassphrase: (keyFile, previousWasWrong) =>
        Promise.resolve(vscode.window.showInputBox({ title: `Passphrase for ${keyFile}`, prompt: previousWasWrong ? 'That passphrase was wrong; try again.' : `The key ${keyFile} is encrypted.`, password: true, ignoreFocusOut: true })),
      onStateChange: (state, detail) => states.set(target.name, { connection: state === 'reconnecting' ? 'connecting' : state, detail }),
      log: (level, message) => log[level](`ssh ${target.name}: ${message}`),
    };
    states.set(target.name, { connection: 'connecting', detail: undefined });
    let transport: Transport;
    try {
      transport = await openTransport({ kind: target.kind, host: target.host, port: target.port, user: target.user, commandPrefix: target.commandPrefix }, hooks);
    } catch (err) {
      states.set(target.name, { connection: 'failed', detail: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    if (target.kind === 'local') states.set(target.name, { connection: 'connected', detail: 'this machine' });
    if (signal.aborted) {
      await transport.close();
      throw new Error('Cancelled while connecting.');
    }
    try {
      const agent = await deployAgent(transport, bundledAgentPath(), target.python);
      return {
        transport,
        agent,
        release: async () => {
          await transport.close();
          if (target.kind === 'local') states.set(target.name, { connection: 'disconnected', detail: undefined });
        },
      };
    } catch (err) {
      await transport.close().catch(() => undefined);
      throw err;
    }
  };
}
