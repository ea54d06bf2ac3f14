import { execFile } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** A host key as the server presented it: the raw SSH wire blob. */
export interface HostKey {
  type: string;
  blob: Buffer;
}

export type HostKeyCheck =
  | { status: 'known' }
  | { status: 'unknown'; hostName: string; fingerprint: string; keyType: string }
  | {
      status: 'changed';
      hostName: string;
      fingerprint: string;
      keyType: string;
      /** The fingerprints known_hosts holds for this host, with where each was found. */
      known: { fingerprint: string; keyType: string; file: string; line: number }[];
    }
  | { status: 'revoked'; hostName: string; fingerprint: string; file: string; line: number };

interface Entry {
  marker?: string;
  patterns: string;
  keyType: string;
  key: Buffer;
  file: string;
  line: number;
}

/** `host` for port 22, `[host]:port` otherwise: the name known_hosts stores. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** OpenSSH's fingerprint format: `SHA256:` and unpadded base64 of the key blob's SHA-256. */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return 'unknown';
  const len = blob.readUInt32BE(0);
  return blob.subarray(4, 4 + len).toString('latin1');
}

/**
 * Checks a server's host key against known_hosts files the way OpenSSH does: plain names,
 * wildcard and negated patterns, hashed `|1|salt|hash` names, `[host]:port` for other ports,
 * `@revoked` lines. A key of the same type that differs from the one on file is a changed key.
 */
export function checkHostKey(files: readonly string[], host: string, port: number, key: HostKey): HostKeyCheck {
  const hostName = knownHostsName(host, port);
  const fp = fingerprint(key.blob);
  const entries = files.flatMap((f) => readEntries(f)).filter((e) => entryMatches(e.patterns, hostName));
  const revoked = entries.find((e) => e.marker === '@revoked' && e.key.equals(key.blob));
  if (revoked) return { status: 'revoked', hostName, fingerprint: fp, file: revoked.file, line: revoked.line };
  const plain = entries.filter((e) => e.marker === undefined);
  if (plain.some((e) => e.key.equals(key.blob))) return { status: 'known' };
  if (plain.length === 0) return { status: 'unknown', hostName, fingerprint: fp, keyType: key.type };
  return {
    status: 'changed',
    hostName,
    fingerprint: fp,
    keyType: key.type,
    known: plain.map((e) => ({ fingerprint: fingerprint(e.key), keyType: e.keyType, file: e.file, line: e.line })),
  };
}

/** The key types known_hosts holds for a host, so the client can ask the server for those first (as ssh does). */
export function knownKeyTypes(files: readonly string[], host: string, port: number): string[] {
  const hostName = knownHostsName(host, port);
  const types = files
    .flatMap((f) => readEntries(f))
    .filter((e) => e.marker === undefined && entryMatches(e.patterns, hostName))
    .map((e) => e.keyType);
  return [...new Set(types)];
}

/** Appends a plain entry, creating the file (and ~/.ssh) private to the user if needed. */
export function addKnownHost(file: string, host: string, port: number, key: HostKey): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const needsNewline = existsSync(file) && !/\n$|^$/.test(readFileSync(file, 'utf8'));
  appendFileSync(file, `${needsNewline ? '\n' : ''}${knownHostsName(host, port)} ${key.type} ${key.blob.toString('base64')}\n`, { mode: 0o600 });
}

/** The exact command that removes a host's old key, for the changed-key message. */
export function removeKeyCommand(file: string, host: string, port: number): string {
  const name = knownHostsName(host, port);
  return `ssh-keygen -R '${name}' -f '${file}'`;
}

/**
 * Removes a host's entries from one known_hosts file with OpenSSH's own `ssh-keygen -R`, which finds
 * hashed names and patterns too and keeps the previous file as FILE.old.
 */
export async function removeKnownHost(file: string, host: string, port: number): Promise<void> {
  const name = knownHostsName(host, port);
  await new Promise<void>((resolve, reject) =>
    execFile('ssh-keygen', ['-R', name, '-f', file], { timeout: 30_000 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
      reject(
        new Error(
          missing
            ? `ssh-keygen (OpenSSH) was not found, so the old key of ${name} was not removed from ${file}. Install the OpenSSH client, or delete the host's line from ${file} by hand.`
            : `\`${removeKeyCommand(file, host, port)}\` failed: ${String(stderr).trim() || err.message}. ${file} is unchanged; delete the host's line from it by hand.`,
        ),
      );
    }),
  );
}

function readEntries(file: string): Entry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const entries: Entry[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    let marker: string | undefined;
    if (fields[0].startsWith('@')) marker = fields.shift();
    if (fields.length < 3) return;
    const [patterns, keyType, b64] = fields;
    const key = Buffer.from(b64, 'base64');
    if (key.length === 0) return;
    entries.push({ marker, patterns, keyType, key, file, line: index + 1 });
  });
  return entries;
}

function entryMatches(patterns: string, hostName: string): boolean {
  if (patterns.startsWith('|1|')) {
    const [, , salt, hash] = patterns.split('|');
    if (!salt || !hash) return false;
    const mac = createHmac('sha1', Buffer.from(salt, 'base64')).update(hostName).digest('base64');
    return mac === hash;
  }
  let matched = false;
  for (const p of patterns.split(',')) {
    const negated = p.startsWith('!');
    const pattern = negated ? p.slice(1) : p;
    if (globMatch(pattern.toLowerCase(), hostName.toLowerCase())) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function globMatch(pattern: string, text: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return re.test(text);
}
