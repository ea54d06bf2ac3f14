import * as assert from 'node:assert/strict';
import { EditorKind, raceOnce, swapOnce, SwapKind } from '../unit/findings/raceActors';
import { Random } from '../unit/findings/random';
import { FuzzTally } from './tally';

// The findings document on disk against the programs that share it, each a process of its own:
// editors that save in place or as vim does, in pieces with a pause between them (0, 5 or 30 ms,
// cut at seeded places, half of them on a line break), or by renaming a new file over it, while one
// or two runs of the tool write; and neighbours that swap the document, its folder, or the folder of
// a document not created yet, for a symlink to a folder outside the workspace every few ms.
// A case is silent-wrong when a line the user saved went missing (at any reload or at the end), a
// temp or lock file was left beside the document, or anything outside the workspace changed.
const SEED = 35;
const EDITORS: EditorKind[] = ['inplace', 'vim'];
const PIECE_PAUSES_MS = [0, 5, 30];
const RUNS = [1, 2];
const SWAPS: SwapKind[] = ['file', 'folder', 'create'];
// Each trial lasts this long at least, and until a run's write was seen twice (raceActors.ts).
const TRIAL_MS = 500;
// The longest pause after an editor's save (each drawn from 1 ms up): bursts of saves closer than a
// run's write, between lulls in which two runs whose blocks shrink and grow (and so watch the file
// for CUT_SETTLE_MS, 200 ms) get their writes in.
const SAVE_EVERY_MS = 300;
const HANG_MS = 60_000;

function withinHangLimit<T>(trial: Promise<T>): Promise<T | 'hang'> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<'hang'>((resolve) => (timer = setTimeout(() => resolve('hang'), HANG_MS)));
  return Promise.race([trial, hang]).finally(() => clearTimeout(timer));
}

describe('findings document under editors that save in pieces and neighbours that swap its path (seeded fuzz)', function () {
  this.timeout(10 * 60_000);
  const tally = new FuzzTally('editors');
  after(() => tally.print());

  it(`loses no line the user saved: ${EDITORS.join(', ')} × pieces ${PIECE_PAUSES_MS.join('/')} ms apart × ${RUNS.join(' or ')} runs, and a rename save`, async () => {
    const rng = new Random(SEED);
    const trials: { kind: EditorKind; runs: number; pieces?: { pauseMs: number; seed: number } }[] = [
      ...EDITORS.flatMap((kind) => PIECE_PAUSES_MS.flatMap((pauseMs) => RUNS.map((runs) => ({ kind, runs, pieces: { pauseMs, seed: rng.int(2 ** 31) } })))),
      { kind: 'rename', runs: 2, pieces: { pauseMs: 30, seed: rng.int(2 ** 31) } },
    ];
    for (const t of trials) {
      const what = `${t.kind} editor, pieces ${t.pieces?.pauseMs} ms apart (seed ${t.pieces?.seed}), ${t.runs} run(s)`;
      try {
        const r = await withinHangLimit(raceOnce(t.kind, t.runs, TRIAL_MS, SAVE_EVERY_MS, t.pieces));
        if (r === 'hang') tally.record('hang', `${what}: no end in ${HANG_MS / 1000} s`);
        else if (r.sawTool === 0) tally.record('hang', `${what}: the runs never got a write in (${r.saves} saves, ${r.warnings} updates left for later)`);
        else if (r.errors.length) tally.record('crash', `${what}: ${r.errors[0]}`);
        else if (r.lost || r.lostAtEnd.length)
          tally.record(
            'silent-wrong',
            `${what}: a saved line went missing ${r.lost} times in ${r.saves} saves (first: ${r.firstLost}), ${r.lostAtEnd.length} at the end`,
          );
        else if (r.leftovers.some((f) => !/^doc\.md\.saved-/.test(f)))
          tally.record('silent-wrong', `${what}: left beside the document: ${r.leftovers.join(', ')}`);
        else if (r.leftovers.length > r.warnings) tally.record('silent-wrong', `${what}: ${r.leftovers.join(', ')} kept without a word`);
        else tally.record('ok');
      } catch (err) {
        tally.record('crash', `${what}: ${String(err)}`);
      }
    }
    assert.deepEqual(tally.problems, []);
  });

  it(`writes nothing outside the workspace while a neighbour swaps ${SWAPS.join(', ')} for a symlink every few ms, with two runs writing`, async () => {
    const rng = new Random(SEED + 1);
    const before = tally.problems.length;
    for (const kind of SWAPS) {
      const periodMs = 1 + rng.int(4);
      const what = `swapping the ${kind === 'file' ? 'document' : kind === 'folder' ? 'folder' : 'folder of a document being created'} every ${periodMs} ms`;
      try {
        const r = await withinHangLimit(swapOnce(kind, 2, TRIAL_MS, periodMs));
        if (r === 'hang') tally.record('hang', `${what}: no end in ${HANG_MS / 1000} s`);
        else if (r.outsideChanged.length) tally.record('silent-wrong', `${what}: changed outside the workspace: ${r.outsideChanged.join(', ')}`);
        else tally.record('ok');
      } catch (err) {
        tally.record('crash', `${what}: ${String(err)}`);
      }
    }
    assert.deepEqual(tally.problems.slice(before), []);
  });
});
