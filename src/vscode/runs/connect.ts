import { Target } from '../../core/config/target';
import { bundledAgentPath, deployAgent, DeployedAgent } from '../../remote/agentDeploy';
import { LocalTransport } from '../../remote/localTransport';
import { Transport } from '../../remote/transport';

export interface Connection {
  transport: Transport;
  agent: DeployedAgent;
  /** Gives the connection back (a shared connection stays open for other users). */
  release(): Promise<void>;
}

export type Connector = (target: Target, signal: AbortSignal) => Promise<Connection>;

/** A connector for targets on this machine; SSH targets come through the connection manager. */
export const localConnector: Connector = async (target) => {
  if (target.kind !== 'local') {
    throw new Error(`Target "${target.name}" is reached over SSH, and this build has no SSH connection manager yet. Use a local target or update the extension.`);
  }
  const transport = new LocalTransport(target.commandPrefix ?? []);
  const agent = await deployAgent(transport, bundledAgentPath(), target.python);
  return { transport, agent, release: () => transport.close() };
};
