import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { execText, Transport } from './transport';

/** Where the agent lives on a host, and how to start it. */
export interface DeployedAgent {
  python: string;
  path: string;
  hash: string;
}

// Runs on the host: a cache folder private to the user, the file named by its content hash, written
// through a temporary name so that two deployments at once never leave half a file behind.
const INSTALL_SCRIPT = [
  'set -e',
  'umask 077',
  'd="${XDG_CACHE_HOME:-$HOME/.cache}/inference-bench"',
  'mkdir -p "$d"',
  'f="$d/agent-$1.pyz"',
  'if [ "$2" = check ]; then if [ -s "$f" ]; then echo "$f"; fi; exit 0; fi',
  'cat > "$f.$$.tmp"',
  'mv "$f.$$.tmp" "$f"',
  'echo "$f"',
].join('\n');

/**
 * Copies the agent zipapp to the host unless a copy with the same content hash is already there.
 * The bytes go over the command's stdin, so this works through a container prefix as well as SSH.
 */
export async function deployAgent(transport: Transport, agentPyz: string, python: string): Promise<DeployedAgent> {
  const bytes = readFileSync(agentPyz);
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const check = await execText(transport, ['sh', '-c', INSTALL_SCRIPT, 'sh', hash, 'check']);
  let path = check.stdout.trim();
  if (check.result.code !== 0) {
    throw new Error(`Could not prepare the agent's cache folder on ${transport.label}: ${check.stderr.trim() || `exit code ${check.result.code}`}`);
  }
  if (!path) {
    const install = await execText(transport, ['sh', '-c', INSTALL_SCRIPT, 'sh', hash, 'install'], { stdin: bytes });
    if (install.result.code !== 0) {
      throw new Error(`Could not copy the agent to ${transport.label}: ${install.stderr.trim() || `exit code ${install.result.code}`}`);
    }
    path = install.stdout.trim();
  }
  return { python, path, hash };
}

/** The agent's command line; `globals` are the agent's own options, before the command. */
export function agentArgv(agent: DeployedAgent, command: string, args: readonly string[], globals: readonly string[] = []): string[] {
  return [agent.python, '-u', agent.path, ...globals, command, ...args];
}

/** The agent zipapp built by `npm run build`: beside the bundle at run time, in dist/ from the sources. */
export function bundledAgentPath(): string {
  const besideBundle = join(__dirname, 'agent.pyz');
  return existsSync(besideBundle) ? besideBundle : resolve(__dirname, '..', '..', 'dist', 'agent.pyz');
}
