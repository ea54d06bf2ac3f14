import * as assert from 'node:assert/strict';

/** Checks `ok` every 100 ms, failing with "`what` within `ms` ms" once `ms` have passed without it. */
export async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) assert.fail(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
