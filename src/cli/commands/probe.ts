import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliCommand, UsageError } from '../command';
import { stderrLogger } from '../cliLogger';
import { nullSink } from '../../core/campaign/phaseContext';
import { DEFAULT_PYTHON, DEFAULT_SERVER_URL, Target } from '../../core/config/target';
import { Logger } from '../../core/log';
import { probeSummaryLines, runProbePhase } from '../../core/phases/probe';
import { bundledAgentPath, deployAgent } from '../../remote/agentDeploy';
import { openTransport } from '../../remote/openTransport';
import { SshHooks } from '../../remote/ssh/connection';

const USAGE = `infbench probe — what is on the target: Python and packages, GPUs and who holds them, the server

Usage: infbench probe [options]

Target:
  --target local|HOST       this machine (default), or an SSH host: a Host alias from ~/.ssh/config
                            or a host name (user@host works too)
  --port N, --user NAME     override the ssh config's Port and User
  --ssh-config FILE         another ssh config file (default ~/.ssh/config)
  --prefix "docker exec -i vllm"   run the agent inside a container on the host
  --accept-new-host-key     trust a host key seen for the first time (it is added to known_hosts);
                            without it an unknown host is refused. A changed key is always refused.
  --url URL                 the server as seen from the target (default ${DEFAULT_SERVER_URL})
  --python PATH             Python 3 on the target (default ${DEFAULT_PYTHON})
  --workspace DIR           where runs are kept (.inference-bench/runs/ under it; default: current folder)
Output:
  --json                    print the probe result as JSON
  --verbose

Example: infbench probe --target gpu-box --url http://127.0.0.1:8000`;

export const probeCommand: CliCommand = {
  name: 'probe',
  summary: 'what the target has: Python and packages, GPUs and their processes, the server, its model and profiler',
  usage: USAGE,
  async run(argv: string[]): Promise<number> {
    let parsed;
    try {
      parsed = parseArgs({
        args: argv,
        options: {
          target: { type: 'string', default: 'local' }, port: { type: 'string' }, user: { type: 'string' }, 'ssh-config': { type: 'string' },
          prefix: { type: 'string' }, 'accept-new-host-key': { type: 'boolean' }, url: { type: 'string' }, python: { type: 'string' },
          workspace: { type: 'string' }, timeout: { type: 'string' }, json: { type: 'boolean' }, verbose: { type: 'boolean' },
        },
        strict: true,
      });
    } catch (err) {
      throw new UsageError(`${err instanceof Error ? err.message : String(err)}. See infbench probe --help.`);
    }
    const v = parsed.values;
    const target = cliTarget(v);
    const log = stderrLogger(v.verbose);
    const transport = await openTransport({ ...target, configFile: v['ssh-config'] }, cliSshHooks(v['accept-new-host-key'] === true, log));
    const abort = new AbortController();
    const onSigint = () => abort.abort();
    process.once('SIGINT', onSigint);
    try {
      const agent = await deployAgent(transport, bundledAgentPath(), target.python);
      const outcome = await runProbePhase({ target, transport, agent, workspace: resolve(v.workspace ?? '.'), log, sink: nullSink, signal: abort.signal },
        { timeoutS: v.timeout ? Number(v.timeout) : undefined });
      if (!outcome.result) {
        process.stderr.write(`infbench probe: ${outcome.agent.status} on ${transport.label}: ${outcome.agent.reason ?? 'no result'}\nRun folder: ${outcome.run.dir}\n`);
        return 1;
      }
      if (v.json) process.stdout.write(`${JSON.stringify(outcome.result, null, 2)}\n`);
      else process.stdout.write(`${[`Target ${target.name} (${transport.label})`, ...probeSummaryLines(outcome.result), `Run folder: ${outcome.run.dir}`].join('\n')}\n`);
      return 0;
    } finally {
      process.removeListener('SIGINT', onSigint);
      await transport.close();
    }
  },
};

/**
 * How the CLI takes part in SSH: an unknown host key is refused unless --accept-new-host-key (then
 * written to known_hosts, saying so); a key passphrase is asked on the terminal when there is one.
 */
export function cliSshHooks(acceptNewHostKey: boolean, log: Logger): SshHooks {
  return {
    onUnknownHostKey: acceptNewHostKey ? async (p) => {
      process.stderr.write(`Trusting the new host key of ${p.hostName}: ${p.keyType} ${p.fingerprint} (added to ${p.knownHostsFile}).\n`);
      return true;
    } : undefined,
    askPassphrase: process.stdin.isTTY ? (file) => askHidden(`Passphrase for ${file}: `) : undefined,
    log: (level, message) => log[level](message),
  };
}

/** The target the flags describe; `--target user@host` splits like ssh's own argument. */
export function cliTarget(v: { target?: string; port?: string; user?: string; prefix?: string; url?: string; python?: string }): Target {
  const name = v.target ?? 'local';
  const serverUrl = v.url ?? DEFAULT_SERVER_URL;
  try {
    new URL(serverUrl);
  } catch {
    throw new UsageError(`--url is not a URL: ${serverUrl}. Example: --url http://127.0.0.1:8000`);
  }
  const commandPrefix = v.prefix?.trim() ? v.prefix.trim().split(/\s+/) : undefined;
  const python = v.python ?? DEFAULT_PYTHON;
  if (name === 'local') return { name, kind: 'local', serverUrl, python, commandPrefix };
  let port: number | undefined;
  if (v.port !== undefined) {
    port = Number(v.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`--port must be a number from 1 to 65535; got "${v.port}".`);
  }
  const at = name.lastIndexOf('@');
  const host = at >= 0 ? name.slice(at + 1) : name;
  const user = v.user ?? (at >= 0 ? name.slice(0, at) : undefined);
  if (!host) throw new UsageError(`--target needs a host after "@"; got "${name}".`);
  return { name, kind: 'ssh', host, port, user, serverUrl, python, commandPrefix };
}

/** Reads a line from the terminal without echoing it. */
function askHidden(prompt: string): Promise<string | undefined> {
  return new Promise((resolvePromise) => {
    const stdin = process.stdin;
    process.stderr.write(prompt);
    let value = '';
    const wasRaw = stdin.isRaw;
    stdin.setRawMode?.(true);
    stdin.resume();
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish(value);
        if (ch === '\u0003' || ch === '\u0004') return finish(undefined);
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const finish = (result: string | undefined) => {
      stdin.removeListener('data', onData);
      stdin.setRawMode?.(wasRaw);
      stdin.pause();
      process.stderr.write('\n');
      resolvePromise(result);
    };
    stdin.on('data', onData);
  });
}
