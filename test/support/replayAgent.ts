import { PassThrough } from 'node:stream';
import { Transport } from '../../src/remote/transport';

/**
 * A transport whose every command prints these agent events and exits with `code` once they are read,
 * as the agent's process would. For tests about how the core shows events, where running the agent
 * against a server that misbehaves just so would add nothing.
 */
export function replayingAgent(events: object[], code = 0): Transport {
  return {
    label: 'replay',
    exec() {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const done = new Promise<{ code: number; signal: null }>((resolve) => stdout.on('end', () => resolve({ code, signal: null })));
      stdout.end(events.map((e) => JSON.stringify({ v: 1, t: 1, ...e })).join('\n') + '\n');
      stderr.end();
      return { stdin: new PassThrough(), stdout, stderr, done, cancel: async () => undefined };
    },
    upload: async () => undefined,
    download: async () => undefined,
    close: async () => undefined,
  };
}
