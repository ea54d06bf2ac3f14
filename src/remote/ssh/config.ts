import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import SSHConfig from 'ssh-config';

/** One hop of a ProxyJump chain: `[user@]host[:port]`, itself resolved through the config. */
export interface JumpSpec {
  host: string;
  user?: string;
  port?: number;
}

/** What we need from `~/.ssh/config` to open one connection, as `ssh -G` would resolve it. */
export interface ResolvedSshConfig {
  /** The alias or name the user typed. */
  alias: string;
  hostName: string;
  port: number;
  user: string;
  /** Files as written (tokens and `~` expanded), in the order ssh tries them. */
  identityFiles: string[];
  /** True when the config named identity files itself (not ssh's defaults). */
  identityFilesExplicit: boolean;
  identitiesOnly: boolean;
  /** The agent socket: IdentityAgent (`none` turns it off), else SSH_AUTH_SOCK. */
  identityAgent?: string;
  proxyJump: JumpSpec[];
  userKnownHostsFiles: string[];
  /** System-wide known_hosts, read but never written. */
  globalKnownHostsFiles: string[];
  /** Set when the config names a ProxyCommand (which we do not run; see the connection). */
  proxyCommand?: string;
  /** Seconds; 0 means off. */
  serverAliveInterval: number;
  serverAliveCountMax: number;
  /** Seconds; undefined means ssh's default (the OS's TCP timeout). */
  connectTimeout?: number;
  strictHostKeyChecking: string;
}

export interface ResolveOptions {
  /** The config file; defaults to ~/.ssh/config (a missing file means an empty config). */
  configFile?: string;
  /** Overrides from the target itself (settings or CLI flags), applied like `ssh -p`/`-l`. */
  user?: string;
  port?: number;
  home?: string;
  env?: NodeJS.ProcessEnv;
}

const DEFAULT_IDENTITIES = ['id_rsa', 'id_ecdsa', 'id_ecdsa_sk', 'id_ed25519', 'id_ed25519_sk', 'id_xmss'];

/**
 * Resolves a Host alias the way OpenSSH does for the options we use: first value wins, Host
 * patterns with wildcards and negation, `Include` (relative to ~/.ssh, with globs), and the
 * `%h %p %r %u %d %%` and `~` expansions. `Match exec` is not run: a config read by an editor
 * extension must not execute commands.
 */
export function resolveSshConfig(alias: string, options: ResolveOptions = {}): ResolvedSshConfig {
  const home = options.home ?? homedir();
  const env = options.env ?? process.env;
  const configFile = options.configFile ?? join(home, '.ssh', 'config');
  const text = existsSync(configFile) ? expandIncludes(readFileSync(configFile, 'utf8'), join(home, '.ssh'), home, 0) : '';
  const parsed = SSHConfig.parse(text);
  const localUser = safeUserName(env);
  const computed = parsed.compute({ Host: alias, ...(options.user ? { User: options.user } : {}) }, { ignoreCase: true, matchExec: false }) as Record<
    string,
    string | string[]
  >;
  const first = (key: string): string | undefined => {
    const v = computed[key];
    if (v === undefined) return undefined;
    return Array.isArray(v) ? v[0] : v;
  };
  const all = (key: string): string[] => {
    const v = computed[key];
    if (v === undefined) return [];
    return Array.isArray(v) ? v.flatMap((x) => x.split(/\s+/)).filter(Boolean) : v.split(/\s+/).filter(Boolean);
  };

  const hostName = expandTokens(first('hostname') ?? alias, { h: alias, home, localUser, r: '', p: '' });
  const port = options.port ?? toInt(first('port')) ?? 22;
  const user = options.user ?? first('user') ?? localUser;
  const tokens = { h: hostName, p: String(port), r: user, home, localUser };
  const explicitIdentities = (computed['identityfile'] as string[] | undefined) ?? [];
  const identityFiles = (explicitIdentities.length ? explicitIdentities : DEFAULT_IDENTITIES.map((f) => `~/.ssh/${f}`)).map((f) => expandPath(f, tokens));
  const agentSetting = first('identityagent');
  let identityAgent: string | undefined;
  if (agentSetting === undefined || agentSetting === 'SSH_AUTH_SOCK') identityAgent = env.SSH_AUTH_SOCK || undefined;
  else if (agentSetting !== 'none') identityAgent = agentSetting.startsWith('$') ? env[agentSetting.slice(1)] || undefined : expandPath(agentSetting, tokens);
  const knownHosts = all('userknownhostsfile');
  const proxyJumpText = first('proxyjump');
  const globalKnownHosts = all('globalknownhostsfile');
  const proxyCommand = typeof computed['proxycommand'] === 'string' ? computed['proxycommand'] : undefined;

  return {
    alias,
    hostName,
    port,
    user,
    identityFiles,
    identityFilesExplicit: explicitIdentities.length > 0,
    identitiesOnly: first('identitiesonly')?.toLowerCase() === 'yes',
    identityAgent,
    proxyJump: proxyJumpText && proxyJumpText.toLowerCase() !== 'none' ? parseProxyJump(proxyJumpText) : [],
    userKnownHostsFiles: (knownHosts.length ? knownHosts : ['~/.ssh/known_hosts', '~/.ssh/known_hosts2']).map((f) => expandPath(f, tokens)),
    globalKnownHostsFiles: (globalKnownHosts.length ? globalKnownHosts : ['/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2']).map((f) =>
      expandPath(f, tokens),
    ),
    proxyCommand: proxyCommand && proxyCommand.toLowerCase() !== 'none' ? proxyCommand : undefined,
    serverAliveInterval: toInt(first('serveraliveinterval')) ?? 0,
    serverAliveCountMax: toInt(first('serveralivecountmax')) ?? 3,
    connectTimeout: toInt(first('connecttimeout')),
    strictHostKeyChecking: (first('stricthostkeychecking') ?? 'ask').toLowerCase(),
  };
}

/** `jump1,bob@jump2:2200,[::1]:22` → hops in the order they are dialled. */
export function parseProxyJump(text: string): JumpSpec[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const spec = part.replace(/^ssh:\/\//, '');
      const at = spec.lastIndexOf('@');
      const user = at >= 0 ? spec.slice(0, at) : undefined;
      let rest = at >= 0 ? spec.slice(at + 1) : spec;
      let port: number | undefined;
      const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
      if (bracket) {
        rest = bracket[1];
        port = bracket[2] ? Number(bracket[2]) : undefined;
      } else {
        const m = /^([^:]+):(\d+)$/.exec(rest);
        if (m) {
          rest = m[1];
          port = Number(m[2]);
        }
      }
      return { host: rest, user, port };
    });
}

interface Tokens {
  h: string;
  p: string;
  r: string;
  home: string;
  localUser: string;
}

function expandTokens(value: string, t: Tokens): string {
  return value.replace(/%([%hprud])/g, (_, c: string) => {
    switch (c) {
      case '%':
        return '%';
      case 'h':
        return t.h;
      case 'p':
        return t.p;
      case 'r':
        return t.r;
      case 'u':
        return t.localUser;
      case 'd':
        return t.home;
      default:
        return _;
    }
  });
}

function expandPath(value: string, t: Tokens): string {
  const unquoted = value.replace(/^"(.*)"$/, '$1');
  const expanded = expandTokens(unquoted, t);
  if (expanded === '~') return t.home;
  if (expanded.startsWith('~/')) return join(t.home, expanded.slice(2));
  return expanded;
}

function toInt(v: string | undefined): number | undefined {
  if (v === undefined || v.toLowerCase() === 'none') return undefined;
  const n = Number.parseInt(v, 10);
  return Number.isFinite(n) ? n : undefined;
}

function safeUserName(env: NodeJS.ProcessEnv): string {
  try {
    return userInfo().username;
  } catch {
    return env.USER ?? env.USERNAME ?? 'root';
  }
}

/**
 * The `Host` aliases a user can connect to, in the order the config (with its Includes) names
 * them, as Remote-SSH lists them: patterns (`*`, `?`, `!`) are left out, as they name no one host.
 */
export function listSshHosts(options: { configFile?: string; home?: string } = {}): string[] {
  const home = options.home ?? homedir();
  const configFile = options.configFile ?? join(home, '.ssh', 'config');
  if (!existsSync(configFile)) return [];
  const text = expandIncludes(readFileSync(configFile, 'utf8'), join(home, '.ssh'), home, 0);
  const hosts: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*host(?:\s+|\s*=\s*)(.+?)\s*$/i.exec(line);
    if (!m) continue;
    for (const name of splitArgs(m[1])) if (!/[*?!]/.test(name) && !hosts.includes(name)) hosts.push(name);
  }
  return hosts;
}

/**
 * Replaces each `Include` with the text of the files it names (in sorted glob order, as ssh does).
 * An Include inside a Host block is conditional in ssh; the block's Host line is repeated after the
 * included text so that the lines that follow still belong to it.
 */
function expandIncludes(text: string, sshDir: string, home: string, depth: number): string {
  if (depth > 16) throw new Error('ssh config: Include nested more than 16 levels deep (a loop?).');
  const out: string[] = [];
  let currentHostLine: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*include(?:\s+|\s*=\s*)(.+?)\s*$/i.exec(line);
    if (/^\s*(host|match)(\s|=)/i.test(line)) currentHostLine = line;
    if (!m) {
      out.push(line);
      continue;
    }
    for (const pattern of splitArgs(m[1])) {
      let p = pattern.startsWith('~/') ? join(home, pattern.slice(2)) : pattern;
      if (!isAbsolute(p)) p = join(sshDir, p);
      for (const file of globFiles(p)) {
        out.push(expandIncludes(readFileSync(file, 'utf8'), sshDir, home, depth + 1));
      }
    }
    if (currentHostLine) out.push(currentHostLine);
  }
  return out.join('\n');
}

function splitArgs(s: string): string[] {
  const args: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s))) args.push(m[1] ?? m[2]);
  return args;
}

/** Expands `*` and `?` in any path component; non-matching patterns give no files (as in ssh). */
function globFiles(pattern: string): string[] {
  if (!/[*?[]/.test(pattern)) return existsSync(pattern) ? [pattern] : [];
  const parts = pattern.split('/');
  let bases = [parts[0] === '' ? '/' : parts[0]];
  for (const part of parts.slice(1)) {
    if (!part) continue;
    const next: string[] = [];
    for (const base of bases) {
      if (!/[*?[]/.test(part)) {
        const p = join(base, part);
        if (existsSync(p)) next.push(p);
        continue;
      }
      const re = new RegExp(
        `^${part
          .replace(/[.+^${}()|\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
      );
      let names: string[] = [];
      try {
        names = readdirSync(base);
      } catch {
        names = [];
      }
      for (const name of names.sort()) if (re.test(name) && !name.startsWith('.')) next.push(join(base, name));
    }
    bases = next;
  }
  return bases.filter((p) => existsSync(p) && !p.endsWith('/')).filter((p) => dirname(p) !== p);
}
