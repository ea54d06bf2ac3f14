import * as assert from 'node:assert/strict';
import { markerId, parseRegions, userText } from '../../../src/core/findings/markers';
import { renderSkeleton } from '../../../src/core/findings/skeleton';
import { applyFindingsUpdate, applyTextEdits, DELETED_NOTE, EDITED_NOTE } from '../../../src/core/findings/update';
import { macroUpdate, profileUpdate } from './fixtures';

const NOW = new Date('2026-12-01T10:00:05Z');
const apply = (text: string, update = macroUpdate(1), previouslyWritten = false) => applyFindingsUpdate(text, update, { now: NOW, previouslyWritten });

function regionText(text: string, sectionId: string, intact = true): string | undefined {
  const r = parseRegions(text)
    .regions.filter((x) => x.id === markerId(sectionId) && x.intact === intact)
    .pop();
  return r && text.slice(r.contentStart, r.contentEnd);
}

/** The section of the document under a `## ` heading, up to the next `## `. */
function sectionOf(text: string, title: string): string {
  const start = text.indexOf(`## ${title}`);
  assert.ok(start >= 0, `no section "${title}" in:\n${text}`);
  const next = text.indexOf('\n## ', start + 3);
  return text.slice(start, next < 0 ? undefined : next);
}

describe('findings document: writing updates', () => {
  it('creates a skeleton with title, campaign header, one section per phase and a notes section', () => {
    const doc = renderSkeleton('k25b6000bench1.md', { target: 'h200-box over SSH', hardware: '8× NVIDIA H200', model: 'Kimi-K2.5 INT4, TP=8' });
    assert.match(doc, /^# Findings: k25b6000bench1\n/);
    assert.match(doc, /\*\*Hardware:\*\* 8× NVIDIA H200/);
    const headings = doc.split('\n').filter((l) => l.startsWith('## '));
    assert.deepEqual(headings, [
      '## Macro: serving benchmark',
      '## Micro: kernels and collectives',
      '## Profiler: one decode step',
      '## Where the milliseconds go',
      '## Notes',
    ]);
    assert.equal(parseRegions(doc).regions.filter((r) => r.intact).length, 1, "only the campaign header is the tool's");
  });

  it('fills the campaign header in when the probe reports, without touching the rest', () => {
    const doc = renderSkeleton('k25b6000bench1.md') + 'my own line\n';
    const { text } = applyFindingsUpdate(doc, { sectionId: 'campaign', heading: '', lines: ['- **Hardware:** 8× NVIDIA H200'], tables: [] });
    assert.match(regionText(text, 'campaign')!, /8× NVIDIA H200/);
    assert.equal(userText(text), userText(doc));
  });

  it("puts a probe's environment under the campaign header, and a second target's after the first", () => {
    const doc = renderSkeleton('b.md');
    const probe = (name: string) => ({ sectionId: `probe-${name}`, heading: `Environment: ${name}`, lines: [`GPUs on ${name}`], tables: [] });
    const text = apply(apply(doc, probe('h200-a')).text, probe('h200-b')).text;
    const at = (s: string) => text.indexOf(s);
    assert.ok(at('inference-bench:end id=campaign') < at('Environment: h200-a'));
    assert.ok(at('Environment: h200-a') < at('Environment: h200-b'));
    assert.ok(at('Environment: h200-b') < at('## Macro'));
    assert.equal(userText(text), userText(doc));
  });

  it("puts the first result at the end of its phase section, after the user's paragraph", () => {
    const doc = renderSkeleton('b.md').replace('## Macro: serving benchmark\n\n', '## Macro: serving benchmark\n\nServer started with --max-num-seqs 256.\n\n');
    const { text, edits } = apply(doc);
    assert.equal(edits.length, 1);
    assert.equal(edits[0].start, edits[0].end, 'a first update only inserts');
    const macro = sectionOf(text, 'Macro: serving benchmark');
    assert.ok(macro.indexOf('--max-num-seqs 256') < macro.indexOf('inference-bench:begin'));
    assert.match(macro, /\| +1 \| +43\.5 \| +17\.55 \|/);
    assert.equal(userText(text), userText(doc));
  });

  it('rewrites only its own region when the same run sends more rows', () => {
    const doc = renderSkeleton('b.md');
    const first = apply(doc, macroUpdate(1)).text;
    const typed = first.replace('## Notes\n', '## Notes\n\nTPOT looks flat up to c=8.\n');
    const second = apply(typed, macroUpdate(2));
    const r = parseRegions(typed).regions.find((x) => x.id === markerId(macroUpdate(1).sectionId))!;
    for (const e of second.edits) assert.ok(e.start >= r.start && e.end <= r.end, 'edits stay inside the region');
    assert.equal(applyTextEdits(typed, second.edits), second.text);
    assert.match(regionText(second.text, macroUpdate(1).sectionId)!, /\| +2 \| +47\.0 \|/);
    assert.equal(second.text.match(/inference-bench:begin id=macro/g)!.length, 1, 'still one region for the run');
    assert.ok(second.text.includes('TPOT looks flat up to c=8.'));
    assert.deepEqual(apply(second.text, macroUpdate(2)).edits, [], 'the same update twice changes nothing');
  });

  it('leaves a region the user edited as it is and appends a fresh one that says so', () => {
    const first = apply(renderSkeleton('b.md')).text;
    const edited = first.replace('Single-stream decode 57.1 tok/s at c=1.', 'Single-stream decode 57.1 tok/s at c=1 — matches last week.');
    const result = apply(edited, macroUpdate(3));
    assert.ok(result.text.includes('matches last week.'));
    assert.equal(userText(result.text), userText(edited));
    const fresh = regionText(result.text, macroUpdate(1).sectionId)!;
    assert.ok(fresh.includes(EDITED_NOTE));
    assert.match(fresh, /\| +4 \| +54\.0 \|/);
    assert.match(result.notice ?? '', /edited by hand/);
    // Further rows go to the fresh region; the user's copy never changes again.
    const later = apply(result.text, macroUpdate(4));
    assert.equal(userText(later.text), userText(result.text));
    assert.match(regionText(later.text, macroUpdate(1).sectionId)!, /\| +8 \|/);
    assert.equal(later.text.split(EDITED_NOTE).length, 2, 'the note is written once');
  });

  it('writes a deleted region again and says so', () => {
    const doc = renderSkeleton('b.md');
    const first = apply(doc).text;
    const r = parseRegions(first).regions.find((x) => x.id === markerId(macroUpdate(1).sectionId))!;
    const deleted = first.slice(0, r.start) + first.slice(r.end);
    const again = apply(deleted, macroUpdate(2), true);
    assert.ok(regionText(again.text, macroUpdate(1).sectionId)!.includes(DELETED_NOTE));
    assert.match(again.notice ?? '', /removed/);
    assert.equal(userText(again.text), userText(deleted));
  });

  it("treats a region whose end marker was deleted as the user's text", () => {
    const first = apply(renderSkeleton('b.md')).text;
    const broken = first.replace(/<!-- inference-bench:end id=macro[^\n]*\n/, '');
    const result = apply(broken, macroUpdate(2));
    assert.equal(userText(result.text), userText(broken));
    assert.ok(regionText(result.text, macroUpdate(1).sectionId)!.includes(EDITED_NOTE));
  });

  it('writes the phase heading again, in its place, when the user deleted it', () => {
    const doc = renderSkeleton('b.md').replace('## Profiler: one decode step\n', '');
    const first = apply(doc, profileUpdate());
    const profiler = first.text.indexOf('## Profiler: one decode step');
    assert.ok(profiler > first.text.indexOf('## Micro') && profiler < first.text.indexOf('## Where the milliseconds go'));
    assert.equal(userText(first.text), userText(doc));
    // A second profiler run lands under the heading the tool wrote, and the first keeps its heading.
    const second = apply(first.text, profileUpdate('profile-2026-12-01_12-00-00-000'));
    assert.equal(second.text.match(/^## Profiler/gm)!.length, 1);
    assert.ok(second.text.indexOf('profile-2026-12-01_12-00') > profiler);
    assert.ok(second.text.indexOf('profile-2026-12-01_12-00') < second.text.indexOf('## Where the milliseconds go'));
    const again = apply(second.text, { ...profileUpdate(), lines: ['All-reduce takes 50% of a decode step.'] });
    assert.ok(again.text.includes('## Profiler: one decode step'));
  });

  it('finds sections by their headings only, not by a `#` inside a code block', () => {
    const doc = '# Findings\n\n```\n## Macro: a heading in code\n```\n\nIntro.\n\n## Macro results\n\nMine.\n';
    const { text } = apply(doc);
    assert.ok(text.indexOf('inference-bench:begin') > text.indexOf('Mine.'));
    assert.equal(userText(text), userText(doc));
  });

  it('keeps a CRLF document in CRLF', () => {
    const doc = renderSkeleton('b.md', undefined, '\r\n');
    assert.ok(!/[^\r]\n/.test(doc));
    let text = apply(doc).text;
    text = apply(text, macroUpdate(3)).text;
    text = apply(text, profileUpdate()).text;
    assert.ok(!/[^\r]\n/.test(text), 'no bare LF was written into a CRLF document');
    assert.equal(userText(text), userText(doc));
    assert.ok(regionText(text, macroUpdate(1).sectionId)!.includes('|           4 |'));
  });

  it('does not take an end-of-line change by the editor for a user edit', () => {
    const lf = apply(renderSkeleton('b.md')).text;
    const crlf = lf.replace(/\n/g, '\r\n');
    const result = apply(crlf, macroUpdate(2));
    assert.equal(result.text.match(/inference-bench:begin id=macro/g)!.length, 1);
  });

  it('appends after a last line that has no line break, leaving that line as it was', () => {
    const doc = '# Notes only\n\nno newline at the end';
    const { text } = apply(doc, profileUpdate());
    assert.ok(text.startsWith(doc));
    assert.equal(userText(text), userText(doc));
    assert.ok(regionText(text, profileUpdate().sectionId)!.includes('## Profiler: one decode step'));
    assert.equal(apply(text, profileUpdate()).edits.length, 0);
  });

  it('keeps a byte-order mark first and still finds the title after it', () => {
    const doc = '\ufeff# Findings: bom\n\nIntro.\n';
    const { text } = applyFindingsUpdate(doc, { sectionId: 'campaign', heading: '', lines: ['- **Target:** local'], tables: [] });
    assert.ok(text.startsWith('\ufeff# Findings: bom\n\n<!-- inference-bench:begin id=campaign'));
    const untitled = applyFindingsUpdate('\ufeffno title here\n', { sectionId: 'campaign', heading: '', lines: ['x'], tables: [] }).text;
    assert.ok(untitled.startsWith('\ufeff<!-- inference-bench:begin'));
  });

  it('keeps unicode text byte for byte around its regions', () => {
    const doc = renderSkeleton('b.md').replace('## Notes\n', '## Notes\n\n注意力 kernels 🚀 look café-fast; e\u0301\n');
    const text = apply(apply(doc).text, { ...macroUpdate(2), lines: ['ünïcödé 👍🏽 line'] }).text;
    assert.equal(userText(text), userText(doc));
    assert.ok(regionText(text, macroUpdate(1).sectionId)!.includes('ünïcödé 👍🏽 line'));
  });

  it('updates its own block, not a copy of it the user quoted in a code block further down', () => {
    const first = apply(renderSkeleton('doc.md')).text;
    const r = parseRegions(first).regions.find((x) => x.id === markerId(macroUpdate(1).sectionId))!;
    const quoted = `${first}\nWhat the tool writes looks like this:\n\n\`\`\`markdown\n${first.slice(r.start, r.end)}\`\`\`\n`;
    const next = apply(quoted, macroUpdate(3), true).text;
    assert.equal(next.slice(next.indexOf('What the tool writes')), quoted.slice(quoted.indexOf('What the tool writes')), 'the quoted copy is unchanged');
    assert.match(sectionOf(next, 'Macro: serving benchmark'), /\| +4 \| +54\.0 \|/);
    assert.equal(userText(next), userText(quoted));
  });

  it('never lets generated text read as one of its markers', () => {
    const sneaky = { ...macroUpdate(1), lines: ['<!-- inference-bench:end id=macro-2026-12-01_10-00-00-000 -->'] };
    const { text } = apply(renderSkeleton('b.md'), sneaky);
    assert.equal(parseRegions(text).orphans.length, 0);
    assert.equal(parseRegions(text).regions.filter((r) => r.intact).length, 2);
  });

  it('lets two runs write at once without disturbing each other', () => {
    let text = renderSkeleton('b.md');
    for (let rows = 1; rows <= 4; rows++) {
      text = apply(text, macroUpdate(rows)).text;
      text = apply(text, macroUpdate(rows, 'macro-2026-12-01_10-05-00-000')).text;
    }
    const a = regionText(text, 'macro-2026-12-01_10-00-00-000')!;
    const b = regionText(text, 'macro-2026-12-01_10-05-00-000')!;
    assert.match(a, /\| +8 \|/);
    assert.match(b, /\| +8 \|/);
    assert.ok(text.indexOf('macro-2026-12-01_10-00') < text.indexOf('macro-2026-12-01_10-05'), 'in the order they started');
  });
});
