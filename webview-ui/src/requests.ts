// A view's requests to the host, matched to their replies by id. Each has a bound on how long the
// host may take: a request the host never answers (its handler threw before replying, the extension
// restarted) settles as a failure instead of leaving a button waiting for ever.
import type { Reply, WebviewRequest } from '../../src/shared/protocol';

/** How long the host may take to answer, by request: an export waits on the user in a save dialog. */
export const REQUEST_TIMEOUT_MS: Record<WebviewRequest['type'], number> = {
  exportCsv: 10 * 60_000,
  exportPng: 10 * 60_000,
  exportTrace: 10 * 60_000,
  insertTable: 30_000,
};

export type Answer = Pick<Reply, 'ok' | 'error'>;

/** Runs `run` after `ms`; returns what cancels it. The tests pass their own clock. */
export type Schedule = (run: () => void, ms: number) => () => void;

const timers: Schedule = (run, ms) => {
  const timer = setTimeout(run, ms);
  return () => clearTimeout(timer);
};

export class Requests {
  private nextId = 1;
  private readonly pending = new Map<number, { settle: (answer: Answer) => void; cancel: () => void }>();

  constructor(
    private readonly send: (request: WebviewRequest) => void,
    private readonly schedule: Schedule = timers,
  ) {}

  /** Sends a request; resolves with the host's reply, or a failure once its time is up. */
  request(build: (requestId: number) => WebviewRequest): Promise<Answer> {
    const requestId = this.nextId++;
    const message = build(requestId);
    const ms = REQUEST_TIMEOUT_MS[message.type];
    return new Promise((resolve) => {
      const cancel = this.schedule(() => {
        this.pending.delete(requestId);
        resolve({ ok: false, error: `The extension did not answer within ${ms / 1000} s; see the Inference Bench log.` });
      }, ms);
      this.pending.set(requestId, { settle: resolve, cancel });
      this.send(message);
    });
  }

  /** The host's reply: settles its request; a reply after the time was up finds nothing to settle. */
  reply(reply: Reply): void {
    const waiting = this.pending.get(reply.requestId);
    if (!waiting) return;
    this.pending.delete(reply.requestId);
    waiting.cancel();
    waiting.settle({ ok: reply.ok, error: reply.error });
  }
}
