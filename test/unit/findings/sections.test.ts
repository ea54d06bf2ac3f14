import * as assert from 'node:assert/strict';
import { parseRegions, userText } from '../../../src/core/findings/markers';
import { headingsOf, notesSection, phaseSection, PHASE_SECTIONS, placeOf } from '../../../src/core/findings/sections';
import { renderSkeleton } from '../../../src/core/findings/skeleton';
import { tablesInDocument } from '../../../src/core/findings/storedTables';
import { applyFindingsUpdate } from '../../../src/core/findings/update';
import { macroUpdate, profileUpdate } from './fixtures';

const macro = PHASE_SECTIONS.find((s) => s.key === 'macro')!;

describe('findings document: the section model', () => {
  it("sends each phase's section ids to its section, the probe to the header and the rest to the end", () => {
    assert.equal(placeOf('macro-2026-12-01_10-00-00-000'), macro);
    assert.equal((placeOf('profile-2026-12-01_10-00-00-000') as { key: string }).key, 'profile');
    assert.equal((placeOf('explain-k25') as { key: string }).key, 'budget');
    assert.equal(placeOf('campaign'), 'campaign');
    assert.equal(placeOf('something-else'), 'end');
  });

  it('reads ATX and setext headings, and none inside fences or HTML comments', () => {
    const text = 'Title\n=====\n\n```\n## Not a heading\n```\n\n<!--\n## Nor this\n-->\n\nMacro numbers\n-------------\n\n### Deeper\n';
    assert.deepEqual(
      headingsOf(text).map((h) => [h.level, h.text, h.line]),
      [
        [1, 'Title', 0],
        [2, 'Macro numbers', 11],
        [3, 'Deeper', 14],
      ],
    );
  });

  it('recognises a renamed or numbered phase heading and ends the section at the next one of its level', () => {
    const text = '# K2.5\n\n## 1. **Macro** — vLLM 0.16\n\n### my sub-notes\n\ntext\n\n## Notes\n';
    const lines = text.split('\n').length;
    const span = phaseSection(headingsOf(text), lines, macro)!;
    assert.equal(span.heading.line, 2);
    assert.equal(span.endLine, 8, 'the section runs over its ### subsections up to ## Notes');
    assert.equal(notesSection(headingsOf(text), lines)!.heading.line, 8);
    assert.equal(notesSection(headingsOf('# Notes\n'), 1), undefined, 'a title that says "Notes" is not the notes section');
  });

  it("pairs markers, and takes an edited region or a lone marker for the user's text", () => {
    let text = applyFindingsUpdate(renderSkeleton('b.md'), macroUpdate(2)).text;
    text = applyFindingsUpdate(text, profileUpdate()).text;
    const parsed = parseRegions(text);
    assert.deepEqual(
      parsed.regions.map((r) => [r.id, r.intact]),
      [
        ['campaign', true],
        ['macro-2026-12-01_10-00-00-000', true],
        ['profile-2026-12-01_11-00-00-000', true],
      ],
    );
    const edited = text.replace('All-reduce takes', 'All-reduce (!) takes').replace(/<!-- inference-bench:end id=macro[^\n]*\n/, '');
    const after = parseRegions(edited);
    assert.deepEqual(
      after.regions.map((r) => [r.id, r.intact]),
      [
        ['campaign', true],
        ['profile-2026-12-01_11-00-00-000', false],
      ],
    );
    assert.deepEqual(after.orphans, [{ id: 'macro-2026-12-01_10-00-00-000', kind: 'begin', line: parsed.regions[1].beginLine }]);
    assert.ok(userText(edited).includes('All-reduce (!) takes'));
    assert.ok(!userText(text).includes('All-reduce takes'));
  });

  it('reads the result tables back out of the document for "Insert Result Here"', () => {
    let text = applyFindingsUpdate(renderSkeleton('b.md'), macroUpdate(3)).text;
    text = applyFindingsUpdate(text, profileUpdate()).text;
    const tables = tablesInDocument(text);
    assert.deepEqual(
      tables.map((t) => t.label),
      ['Serving by concurrency', 'Decode step by category'],
    );
    const serving = tables[0].table;
    assert.deepEqual(
      serving.columns.map((c) => c.label),
      ['concurrency', 'TTFT p50 (ms)', 'TPOT p50 (ms)', 'output tok/s'],
    );
    assert.equal(serving.rows.length, 3);
    assert.equal(serving.rows[2].c1, '54.0');
    assert.equal(serving.note, 'simulator, 200 requests per level');
    assert.match(tables[1].detail ?? '', /Profiler run 2026-12-01 11:00 UTC/);
    const odd = {
      ...profileUpdate('profile-odd'),
      tables: [{ id: 'k', title: 'Kernels', columns: [{ key: 'n', label: 'kernel' }], rows: [{ n: 'all|reduce \\ a\\|b' }] }],
    };
    assert.equal(
      tablesInDocument(applyFindingsUpdate('# x\n', odd).text)[0].table.rows[0].c0,
      'all|reduce \\ a\\|b',
      'pipes and backslashes come back as they were',
    );
  });
});
