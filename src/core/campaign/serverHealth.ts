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
