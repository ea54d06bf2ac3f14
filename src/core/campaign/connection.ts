import { Target } from '../config/target';
import { DeployedAgent } from '../../remote/agentDeploy';
import { Transport } from '../../remote/transport';

export interface Connection {
  transport: Transport;
  agent: DeployedAgent;
  /** Gives the connection back (a shared SSH connection stays open while others use it). */
  release(): Promise<void>;
}

export type Connector = (target: Target, signal: AbortSignal) => Promise<Connection>;
