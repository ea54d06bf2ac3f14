import { Target } from '../config/target';
import { DeployedAgent } from '../../remote/agentDeploy';
import { Transport } from '../../remote/transport';

/** A target's transport with the agent deployed on it: what a front end hands a phase (PhaseContext). */
export interface Connection {
  transport: Transport;
  agent: DeployedAgent;
  /** Gives the connection back (a shared SSH connection stays open while others use it). */
  release(): Promise<void>;
}

/** How a front end connects to a target; the VS Code one shares one SSH connection per host. */
export type Connector = (target: Target, signal: AbortSignal) => Promise<Connection>;
