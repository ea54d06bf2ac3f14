import * as assert from 'node:assert/strict';
import { FindingsUpdate } from '../../../src/core/campaign/phaseContext';
import { renderMarkdownTable } from '../../../src/core/findings/markdownTable';
import { markerId, parseRegions, userText } from '../../../src/core/findings/markers';
import { renderSkeleton } from '../../../src/core/findings/skeleton';
import { applyFindingsUpdate, applyTextEdits, TextEdit } from '../../../src/core/findings/update';
import { ResultTable } from '../../../src/shared/table';
import { Random } from './random';

// Seeded so that a failure names the seed that replays it: INFBENCH_FINDINGS_SEED=<seed> npm run test:unit
const BASE_SEED = Number(process.env.INFBENCH_FINDINGS_SEED ?? 20261201);
const SCENARIOS = Number(process.env.INFBENCH_FINDINGS_SCENARIOS ?? 300);
const STEPS = 30;

const SECTION_IDS = ['macro-r1', 'macro-r2', 'micro-r1', 'profile-r1', 'budget-r1', 'campaign', 'other-r1'];

const USER_LINES = [
  '# Findings: k25b6000bench1',
  '## Macro: serving benchmark',
  '## Micro',
  '## Profiler',
  '## Where the milliseconds go',
  '## Notes',
  '### my subsection',
  'Title',
  '=====',
  'Sub',
  '---',
  '',
  '',
  '',
  '   ',
  'Plain prose about TPOT.',
  '注意力 kernels 🚀 café e\u0301',
  '| a | b |',
  '| - | - |',
  '| 1 | 2 |',
  '```',
  '## Macro inside a fence?',
  '> quoted',
  '- item',
  '<!-- a comment of my own -->',
  '<!-- inference-bench:end id=macro-r1 -->',
  '<!-- inference-bench:begin id=macro-r2 v=1 hash=000000000000 -->',
  'tab\there',
];
const SNIPPETS = ['x', 'hello ', '\n', '\r\n', '\n\n', '## Macro\n', '## Notes\n', '👍🏽', 'ü', '| 9 |', '```\n', '<!--', '-->', ' ', '\t'];
const PROSE = [
  'Decode 57.1 tok/s at c=1.',
  'all-reduce 51.5% of a step',
  '🚀 fast',
  '| pipe | in prose |',
  'ünïcödé',
  '`code` and **bold**',
  '<!-- inference-bench:end id=macro-r1 -->',
];

function randomTable(rng: Random): ResultTable {
  const columns = [
    { key: 'name', label: rng.pick(['kernel', 'category', '名前']), align: 'left' as const },
    { key: 'ms', label: 'ms', digits: rng.int(4) },
  ];
  const rows = Array.from({ length: rng.int(5) }, () => ({
    name: rng.pick(['gemm', 'all|reduce', '注意力', 'idle 😴', '']),
    ms: rng.chance(0.1) ? null : rng.next() * 100,
  }));
  return { id: `t${rng.int(3)}`, title: rng.pick(['Top kernels', 'By size', '']), columns, rows, note: rng.chance(0.3) ? 'simulator' : undefined };
}

function randomUpdate(rng: Random): FindingsUpdate {
  return {
    sectionId: rng.pick(SECTION_IDS),
    heading: rng.pick(['Macro run', 'Profiler run ünï', '', 'Budget']),
    lines: Array.from({ length: rng.int(3) }, () => rng.pick(PROSE)),
    tables: Array.from({ length: rng.int(3) }, () => randomTable(rng)),
  };
}

function randomDocument(rng: Random): string {
  const eol = rng.chance(0.3) ? '\r\n' : '\n';
  // Some files saved on Windows start with a byte-order mark.
  const bom = rng.chance(0.1) ? '\ufeff' : '';
  if (rng.chance(0.4)) return bom + renderSkeleton('k25b6000bench1.md', undefined, eol);
  const lines = Array.from({ length: rng.int(25) }, () => rng.pick(USER_LINES));
  return bom + lines.join(eol) + (rng.chance(0.7) ? eol : '');
}

/** An offset a user could put the cursor at: not inside a surrogate pair or a CRLF. */
function cursor(rng: Random, text: string, from = 0, to = text.length): number {
  let at = from + rng.int(to - from + 1);
  while (at > from && at < text.length && (/[\udc00-\udfff]/.test(text[at]) || (text[at] === '\n' && text[at - 1] === '\r'))) at--;
  return at;
}

/** One replacement, as a user's keystroke, paste or deletion makes it. */
interface Replace {
  start: number;
  end: number;
  text: string;
}

/** What a user might do to the document between two updates, including inside the tool's regions. */
function userEdit(rng: Random, text: string): Replace {
  const parsed = parseRegions(text);
  const regions = parsed.regions;
  const none = { start: 0, end: 0, text: '' };
  switch (rng.int(7)) {
    case 0: {
      const at = cursor(rng, text);
      return { start: at, end: at, text: rng.pick(SNIPPETS) };
    }
    case 1: {
      const a = cursor(rng, text);
      return { start: a, end: cursor(rng, text, a, Math.min(text.length, a + 1 + rng.int(40))), text: '' };
    }
    case 2: {
      if (!regions.length) return none;
      const r = rng.pick(regions);
      const at = cursor(rng, text, r.contentStart, r.contentEnd);
      return { start: at, end: at, text: rng.pick(SNIPPETS) };
    }
    case 3: {
      if (!regions.length) return none;
      const r = rng.pick(regions);
      return { start: r.start, end: r.end, text: '' };
    }
    case 4: {
      const markers = parsed.lines.filter((l) => text.slice(l.start, l.end).includes('inference-bench:'));
      if (!markers.length) return none;
      const l = rng.pick(markers);
      return { start: l.start, end: l.next, text: '' };
    }
    case 5: {
      const headings = parsed.lines.filter((l) => text.slice(l.start, l.end).startsWith('## '));
      if (!headings.length) return none;
      const l = rng.pick(headings);
      return { start: l.start, end: l.next, text: '' };
    }
    default: {
      const at = cursor(rng, text);
      return { start: at, end: at, text: rng.pick(USER_LINES) + (rng.chance(0.5) ? '\n' : '\r\n') };
    }
  }
}

/**
 * The test's own account of which spans the tool may write, kept apart from the code under test:
 * a span is the tool's from the moment the tool writes it until the user's edit touches it.
 */
interface Span {
  start: number;
  end: number;
}

function afterUserEdit(spans: Span[], e: Replace): Span[] {
  const delta = e.text.length - (e.end - e.start);
  const out: Span[] = [];
  for (const s of spans) {
    const touches = e.start === e.end ? e.start > s.start && e.start < s.end : e.start < s.end && e.end > s.start;
    if (touches) continue;
    out.push(e.end <= s.start ? { start: s.start + delta, end: s.end + delta } : s);
  }
  return out;
}

function outside(text: string, spans: Span[]): string {
  let out = '';
  let at = 0;
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    out += text.slice(at, s.start);
    at = s.end;
  }
  return out + text.slice(at);
}

/** Checks that the tool's edits stay inside its spans or insert whole new ones; returns the new spans. */
function afterToolEdits(spans: Span[], edits: TextEdit[], where: string): Span[] {
  const delta = (e: TextEdit) => e.text.length - (e.end - e.start);
  const mapped = spans.map((s) => {
    let start = s.start;
    let end = s.end;
    for (const e of edits) {
      const insertion = e.start === e.end;
      const inside = e.start >= s.start && e.end <= s.end;
      if (insertion && e.start <= s.start) start += delta(e);
      if (insertion ? e.start < s.end : e.end <= s.end) end += delta(e);
      if (!insertion && !inside && e.end > s.start && e.start < s.end) assert.fail(`an edit crosses the edge of a tool region, ${where}`);
      if (!insertion && !inside && e.end <= s.start) start += delta(e);
    }
    return { start, end };
  });
  let shift = 0;
  for (const e of edits) {
    const insertion = e.start === e.end;
    const inTool = spans.some((s) => e.start >= s.start && e.end <= s.end && !(insertion && (e.start === s.start || e.start === s.end)));
    if (!inTool) {
      assert.ok(insertion, `the tool replaced text that is not its own, ${where}`);
      assert.ok(!spans.some((s) => e.start > s.start && e.start < s.end), `the tool inserted inside its region, ${where}`);
      mapped.push({ start: e.start + shift, end: e.start + shift + e.text.length });
    }
    shift += delta(e);
  }
  return mapped;
}

describe('findings document: randomized property', () => {
  it(`never changes a byte of the user's text outside the markers (${SCENARIOS} seeded scenarios of ${STEPS} steps)`, function () {
    // About 2 s on an idle 2-core VM; room for a machine busy with other test layers.
    this.timeout(120_000);
    let updates = 0;
    for (let s = 0; s < SCENARIOS; s++) {
      const seed = BASE_SEED + s;
      const rng = new Random(seed);
      let text = randomDocument(rng);
      // The skeleton's campaign header is the tool's; a random document holds only the user's text.
      let spans: Span[] = parseRegions(text)
        .regions.filter((r) => r.intact)
        .map((r) => ({ start: r.start, end: r.end }));
      const written = new Set<string>();
      for (let step = 0; step < STEPS; step++) {
        const where = `seed ${seed}, step ${step} (replay: INFBENCH_FINDINGS_SEED=${seed} INFBENCH_FINDINGS_SCENARIOS=1)`;
        if (rng.chance(0.45)) {
          const edit = userEdit(rng, text);
          const edited = text.slice(0, edit.start) + edit.text + text.slice(edit.end);
          if (edited !== text) spans = afterUserEdit(spans, edit);
          text = edited;
          continue;
        }
        const update = randomUpdate(rng);
        const before = text;
        const result = applyFindingsUpdate(before, update, {
          now: new Date(Date.UTC(2026, 11, 1, 10, 0, step)),
          previouslyWritten: written.has(update.sectionId),
        });
        updates++;
        written.add(update.sectionId);
        assert.equal(applyTextEdits(before, result.edits), result.text, `edits do not produce the text, ${where}`);
        let last = 0;
        for (const e of result.edits) {
          assert.ok(e.start >= last && e.end >= e.start && e.end <= before.length, `edits overlap or run out of the text, ${where}`);
          last = e.end;
        }
        if (process.env.INFBENCH_FINDINGS_DEBUG) console.error(JSON.stringify({ before, spans, edits: result.edits, update }, null, 1));
        const newSpans = afterToolEdits(spans, result.edits, where);
        assert.equal(outside(result.text, newSpans), outside(before, spans), `user text changed, ${where}`);
        assert.equal(userText(result.text), userText(before), `user text (as the tool sees it) changed, ${where}`);
        assert.equal(result.text.startsWith('\ufeff'), before.startsWith('\ufeff'), `the byte-order mark moved, ${where}`);
        spans = newSpans;
        // The update landed: an intact region of that id holds every row of every table.
        const region = parseRegions(result.text)
          .regions.filter((r) => r.id === markerId(update.sectionId) && r.intact)
          .pop();
        assert.ok(region, `no region for ${update.sectionId}, ${where}`);
        assert.ok(
          spans.some((sp) => sp.start === region.start && sp.end === region.end),
          `the update landed outside the tool's spans, ${where}`,
        );
        const content = result.text.slice(region.contentStart, region.contentEnd).replace(/\r\n/g, '\n');
        for (const table of update.tables) assert.ok(content.includes(renderMarkdownTable(table)), `a table is missing, ${where}`);
        assert.deepEqual(
          applyFindingsUpdate(result.text, update, { now: new Date(Date.UTC(2026, 11, 1, 10, 0, step)), previouslyWritten: true }).edits,
          [],
          `not idempotent, ${where}`,
        );
        text = result.text;
      }
    }
    assert.ok(updates > SCENARIOS * STEPS * 0.4);
  });
});
