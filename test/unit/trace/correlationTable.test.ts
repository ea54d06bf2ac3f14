import * as assert from 'node:assert/strict';
import { CorrelationTable } from '../../../src/core/trace/online';

// The analyzer's table of launches and kernels waiting for their partner, keyed by correlation id
// (an open-addressing hash table of typed arrays), against a Map doing the same.
describe('the table of launches and kernels waiting by correlation id', () => {
  for (const range of [40, 5000, 1 << 30]) {
    it(`keeps every entry of each id, newest first, through adds, removes and trims (ids below ${range})`, () => {
      let seed = range;
      const random = (n: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
      const table = new CorrelationTable();
      const ref = new Map<number, number[]>();
      const entries = (corr: number) => {
        const out: number[] = [];
        for (let s = table.head(corr); s >= 0; s = table.next[s]) out.push(table.a[s]);
        return out;
      };
      for (let op = 0; op < 60_000; op++) {
        const corr = random(range);
        const what = random(10);
        if (what < 5) {
          const slot = table.add(corr, op, 0, 0);
          assert.equal(table.a[slot], op);
          ref.set(corr, [op, ...(ref.get(corr) ?? [])]);
        } else if (what < 9) {
          table.remove(corr);
          ref.delete(corr);
        } else if (op % 500 === 0) {
          // The lowest ids go first: Kineto numbers launches in order.
          const keep = random(ref.size + 1);
          table.trim(keep);
          const ids = [...ref.keys()].sort((x, y) => x - y);
          for (const id of ids.slice(0, ids.length - keep)) ref.delete(id);
        }
        assert.equal(table.size, ref.size);
        const probe = random(range);
        assert.deepEqual(entries(probe), ref.get(probe) ?? []);
      }
      for (const [corr, list] of ref) assert.deepEqual(entries(corr), list);
      assert.equal(table.head(-1), -1);
    });
  }
});
