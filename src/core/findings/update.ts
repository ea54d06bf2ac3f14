import { FindingsUpdate } from './findingsUpdate';
import { detectEol, isBlank, Line } from './lines';
import { beginMarker, endMarker, markerId, parseRegions, ParsedRegions, Region } from './markers';
import { NOTE_PREFIX, renderUpdate } from './render';
import { headingsOf, notesSection, phaseSection, PHASE_SECTIONS, placeOf, SectionSpan } from './sections';

/** Replace `[start, end)` of the text the edit was computed from with `text`. */
export interface TextEdit {
  start: number;
  end: number;
  text: string;
}

export interface FindingsEdit {
  /** Non-overlapping, in document order, offsets into the text the update was applied to. */
  edits: TextEdit[];
  /** The document after the edits. */
  text: string;
  /** Set when the tool could not write where it wrote before and says why (for a log line). */
  notice?: string;
}

export interface ApplyOptions {
  /** Time of the update, for the provenance line. */
  now?: Date;
  /** The caller wrote this section before: if its region is gone, the user deleted it. */
  previouslyWritten?: boolean;
}

export const EDITED_NOTE = `${NOTE_PREFIX}an earlier block for this run was edited by hand, so it is left as you wrote it; the current results are here.`;
export const DELETED_NOTE = `${NOTE_PREFIX}the block for this run was removed from the document; the current results are written here again.`;

export function applyTextEdits(text: string, edits: readonly TextEdit[]): string {
  let out = '';
  let at = 0;
  for (const e of [...edits].sort((a, b) => a.start - b.start)) {
    out += text.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + text.slice(at);
}

/**
 * Writes one findings update into the document text: replaces the content of the section's own
 * region if the tool still owns it, or appends a fresh region at the end of the phase's section
 * (creating the section heading inside the region if the user deleted it). Text outside the tool's
 * intact regions is never touched; a region the user edited becomes theirs.
 */
export function applyFindingsUpdate(text: string, update: FindingsUpdate, options: ApplyOptions = {}): FindingsEdit {
  const parsed = parseRegions(text);
  const eol = detectEol(text);
  const id = markerId(update.sectionId);
  const mine = parsed.regions.filter((r) => r.id === id);
  const live = [...mine].reverse().find((r) => r.intact);
  const damaged = mine.some((r) => !r.intact) || parsed.orphans.some((o) => o.id === id);

  const notes: string[] = [];
  if (live) {
    // Notes written before stay, so that the region does not flip back and forth between updates.
    for (const line of text.slice(live.contentStart, live.contentEnd).split(/\r\n?|\n/)) {
      if (line.startsWith(NOTE_PREFIX) && !notes.includes(line)) notes.push(line);
    }
  }
  if (damaged && !notes.includes(EDITED_NOTE)) notes.push(EDITED_NOTE);
  if (!live && !damaged && options.previouslyWritten && !notes.includes(DELETED_NOTE)) notes.push(DELETED_NOTE);

  if (live) {
    const sectionHeading = carriedSectionHeading(text.slice(live.contentStart, live.contentEnd));
    const content = renderUpdate(update, eol, { now: options.now, notes, sectionHeading });
    const edits = replaceRegionContent(text, live, id, content);
    return { edits, text: applyTextEdits(text, edits) };
  }

  const at = insertionPoint(text, parsed, update.sectionId);
  // Never before a byte-order mark: it must stay the file's first character.
  if (at.offset === 0 && text.startsWith('\ufeff')) at.offset = 1;
  const content = renderUpdate(update, eol, { now: options.now, notes, sectionHeading: at.sectionHeading });
  const region = `${beginMarker(id, content)}${eol}${content}${endMarker(id)}${eol}`;
  const edits = [{ start: at.offset, end: at.offset, text: region }];
  const notice = damaged
    ? `The findings block "${update.sectionId}" was edited by hand; it is left as it is and a fresh block was added below it.`
    : options.previouslyWritten
      ? `The findings block "${update.sectionId}" was removed from the document; it was written again.`
      : undefined;
  return { edits, text: applyTextEdits(text, edits), notice };
}

/** The `## ` phase heading the tool wrote into a region because the user had deleted theirs. */
function carriedSectionHeading(content: string): string | undefined {
  const first = content.split(/\r\n?|\n/).find((l) => l.trim() !== '');
  const match = first ? /^## (.+)$/.exec(first) : null;
  return match && PHASE_SECTIONS.some((s) => s.title === match[1]) ? match[1] : undefined;
}

/** The smallest edits that turn the region's begin line and content into the new ones. */
function replaceRegionContent(text: string, region: Region, id: string, content: string): TextEdit[] {
  const edits: TextEdit[] = [];
  const begin = beginMarker(id, content);
  const oldBegin = text.slice(region.start, region.beginLineEnd);
  if (oldBegin !== begin) edits.push({ start: region.start, end: region.beginLineEnd, text: begin });
  const diff = minimalDiff(text.slice(region.contentStart, region.contentEnd), content);
  if (diff) edits.push({ start: region.contentStart + diff.start, end: region.contentStart + diff.end, text: diff.text });
  return edits;
}

function splitsPair(text: string, at: number): boolean {
  const before = text.charCodeAt(at - 1);
  const after = text.charCodeAt(at);
  // Never cut a surrogate pair or a CRLF in two: editors may treat either as one unit.
  return (before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff) || (before === 0x0d && after === 0x0a);
}

/** One edit covering the changed middle between a common prefix and a common suffix, or none. */
export function minimalDiff(before: string, after: string): TextEdit | undefined {
  if (before === after) return undefined;
  let prefix = 0;
  const max = Math.min(before.length, after.length);
  while (prefix < max && before.charCodeAt(prefix) === after.charCodeAt(prefix)) prefix++;
  while (prefix > 0 && (splitsPair(before, prefix) || splitsPair(after, prefix))) prefix--;
  let suffix = 0;
  while (suffix < max - prefix && before.charCodeAt(before.length - 1 - suffix) === after.charCodeAt(after.length - 1 - suffix)) suffix++;
  while (suffix > 0 && (splitsPair(before, before.length - suffix) || splitsPair(after, after.length - suffix))) suffix--;
  return { start: prefix, end: before.length - suffix, text: after.slice(prefix, after.length - suffix) };
}

interface InsertionPoint {
  offset: number;
  /** The phase heading to write inside the region, when the document has none. */
  sectionHeading?: string;
}

function offsetOfLine(text: string, lines: Line[], line: number): number {
  return line >= lines.length ? text.length : lines[line].start;
}

/** Moves an offset that falls inside any region (the tool's or an edited one) to just after it. */
function outsideRegions(parsed: ParsedRegions, offset: number): number {
  for (let moved = true; moved;) {
    moved = false;
    for (const r of parsed.regions) {
      if (offset > r.start && offset < r.end) {
        offset = r.end;
        moved = true;
      }
    }
  }
  return offset;
}

/** Past the regions that start right here (the campaign header, earlier probes), so the newest comes last. */
function afterAdjacentRegions(parsed: ParsedRegions, offset: number): number {
  for (let r = parsed.regions.find((x) => x.start === offset); r; r = parsed.regions.find((x) => x.start === offset)) offset = r.end;
  return offset;
}

/**
 * Where in a section a new region goes: after its last content (and after one blank line, if there
 * is one, so the region is set off from the user's paragraph), directly after a region that ends
 * the section.
 */
function endOfSection(text: string, parsed: ParsedRegions, span: SectionSpan): number {
  const { lines } = parsed;
  let last = span.heading.line;
  for (let i = span.endLine - 1; i > span.heading.line; i--) {
    if (!isBlank(text, lines[i])) {
      last = i;
      break;
    }
  }
  const endsRegion = parsed.regions.some((r) => r.endLine === last);
  const line = !endsRegion && last + 1 < span.endLine ? last + 2 : last + 1;
  return offsetOfLine(text, lines, line);
}

function insertionPoint(text: string, parsed: ParsedRegions, sectionId: string): InsertionPoint {
  const place = placeOf(sectionId);
  const headings = headingsOf(text);
  const lineCount = parsed.lines.length;
  if (place === 'end') return { offset: text.length };
  if (place === 'campaign') {
    // Under the title; at the very top when there is none.
    const title = headings.find((h) => h.level === 1);
    if (!title) return { offset: outsideRegions(parsed, 0) };
    const after = title.endLine;
    const line = after < lineCount && isBlank(text, parsed.lines[after]) ? after + 1 : after;
    return { offset: afterAdjacentRegions(parsed, outsideRegions(parsed, offsetOfLine(text, parsed.lines, line))) };
  }
  const span = phaseSection(headings, lineCount, place);
  if (span) return { offset: outsideRegions(parsed, endOfSection(text, parsed, span)) };

  // The user deleted the section's heading: write it again, before the next phase's section or the
  // notes, or after the previous phase's section, or at the end.
  const order = PHASE_SECTIONS.indexOf(place);
  const earlier = PHASE_SECTIONS.slice(0, order)
    .map((s) => phaseSection(headings, lineCount, s))
    .filter((s): s is SectionSpan => !!s)
    .sort((a, b) => b.heading.line - a.heading.line)[0];
  const anchors = [...PHASE_SECTIONS.slice(order + 1).map((s) => phaseSection(headings, lineCount, s)), notesSection(headings, lineCount)]
    .filter((s): s is SectionSpan => !!s && (!earlier || s.heading.line > earlier.heading.line))
    .sort((a, b) => a.heading.line - b.heading.line);
  let offset: number;
  if (anchors.length) offset = offsetOfLine(text, parsed.lines, anchors[0].heading.line);
  else if (earlier) offset = endOfSection(text, parsed, earlier);
  else offset = text.length;
  return { offset: outsideRegions(parsed, offset), sectionHeading: place.title };
}
