import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../../../src/cli/command';
import { parseAnalyzeArgs, writeBreakdown } from '../../../src/cli/commands/analyze';

const TRACE = 'test/fixtures/traces/llama_cudagraph_decode.pt.trace.json.gz';

describe('infbench analyze arguments', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ib-analyze-args-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('analyses a file given twice, by its path and through a link, once and says so', () => {
    const link = join(dir, 'same.pt.trace.json.gz');
    symlinkSync(join(process.cwd(), TRACE), link);
    const args = parseAnalyzeArgs([TRACE, link]);
    assert.equal(args.files.length, 1);
    assert.deepEqual(args.notes, [`${link} is the same file as ${TRACE}: analysed once, as one rank.`]);
  });

  it('refuses an --out it cannot write before any trace is read', () => {
    assert.throws(
      () => parseAnalyzeArgs([TRACE, '--out', join(dir, 'no-such-folder', 'b.json')]),
      (err: Error) => {
        assert.ok(err instanceof UsageError);
        assert.match(err.message, /the folder .*no-such-folder does not exist/);
        return true;
      },
    );
    assert.throws(() => parseAnalyzeArgs([TRACE, '--out', dir]), /is a folder: give a file name/);
  });

  it('refuses a --family pattern that could hang on a long kernel name, as a usage error', () => {
    assert.throws(
      () => parseAnalyzeArgs([TRACE, '--family', 'mine=(x+)+y']),
      (err: Error) => err instanceof UsageError && /--family mine=.*refused: it repeats a group/.test(err.message),
    );
  });

  it('on a full disk leaves an earlier --out as it was and says the breakdown printed is complete, not that a run folder has it', () => {
    const out = join(dir, 'breakdown.json');
    writeFileSync(out, '{"earlier": true}\n');
    // A full disk cannot be made for a unit test: the write fails as Node reports ENOSPC.
    const full = () => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    };
    const said = writeBreakdown(out, '{"new": true}', full);
    assert.match(said ?? '', /^could not write .*breakdown\.json: the disk that holds .* is full \(ENOSPC\)/);
    assert.match(said ?? '', /The breakdown printed above is complete; .*breakdown\.json was left as it was before\./);
    assert.doesNotMatch(said ?? '', /run folder/);
    assert.equal(readFileSync(out, 'utf8'), '{"earlier": true}\n');
  });

  it('writes --out whole through a file beside it that does not stay', () => {
    const out = join(dir, 'written.json');
    assert.equal(writeBreakdown(out, '{"a": 1}'), undefined);
    assert.equal(readFileSync(out, 'utf8'), '{"a": 1}\n');
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('written.json.')),
      [],
    );
    assert.ok(existsSync(out));
  });
});
