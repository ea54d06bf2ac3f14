import { execText, Transport } from '../../remote/transport';

/** Whether the target's server answers now, as seen from its host. */
export interface ServerHealth {
  answering: boolean;
  /** Why not, in words: "nothing answers at http://127.0.0.1:8000 (connection refused)", "/health answered HTTP 503". */
  detail?: string;
}

// Runs on the host with the target's Python, standard library only. /health needs no API key on
// vLLM or SGLang (both leave it outside their key check), so no secret travels with it.
const HEALTH_CHECK = [
  'import sys, urllib.error, urllib.request',
  'try:',
  '    print(urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])).status)',
  'except urllib.error.HTTPError as e:',
  '    print(e.code)',
  'except Exception as e:',
  '    print("error", getattr(e, "reason", None) or e)',
].join('\n');

/**
 * Asks the server's /health from its host, through the target's connection: a quick look the
 * sidebar takes every few seconds, so that a server that stopped shows as such without a probe.
 */
export async function checkServerHealth(transport: Transport, python: string, serverUrl: string, timeoutS = 3): Promise<ServerHealth> {
  const url = `${serverUrl.replace(/\/+$/, '')}/health`;
  const { stdout, stderr, result } = await execText(transport, [python, '-c', HEALTH_CHECK, url, String(timeoutS)]);
  const said = stdout.trim();
  if (result.code !== 0 || !said)
    throw new Error(`the health check could not run with ${python} on ${transport.label}: ${stderr.trim() || `exit code ${result.code}`}`);
  if (said === '200') return { answering: true };
  if (/^\d+$/.test(said)) return { answering: false, detail: `${url} answered HTTP ${said}` };
  return { answering: false, detail: `nothing answers at ${serverUrl} (${said.replace(/^error /, '')})` };
}

/** A change of the server the tool itself made and has not put back (its record under .inference-bench/server). */
export interface HeldChange {
  record: { state: string; purpose: string };
}

/**
 * Why the server does not answer when the tool itself has it down, in words ("stopped for micro"):
 * the newest change of the target's server that is under way. Undefined when no change of the tool's
 * explains it (a failed change is a real problem, not a plan).
 */
export function serverHeldBy(changes: readonly HeldChange[]): string | undefined {
  for (const { record } of changes) {
    const purpose = record.purpose;
    switch (record.state) {
      case 'stopping':
        return `stopping for ${purpose}`;
      case 'stopped':
        return `stopped for ${purpose}`;
      case 'starting':
        return `starting again (${purpose})`;
      case 'changed':
        return `restarted for ${purpose}`;
      case 'restoring':
        return `being put back after ${purpose}`;
      default:
        break;
    }
  }
  return undefined;
}
