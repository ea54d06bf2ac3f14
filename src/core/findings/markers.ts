import { createHash } from 'node:crypto';
import { Line, normalizeEol, splitLines } from './lines';
import { closedFences } from './sections';

// The tool's regions are delimited by HTML comments, invisible in the rendered document:
//   <!-- inference-bench:begin id=<section id> v=1 hash=<content hash> -->
//   ...content the tool owns...
//   <!-- inference-bench:end id=<section id> -->
// The hash covers the content between the two marker lines, so a region the user edited is
// recognised as theirs (and never written again). Anything may precede a begin marker on its line
// (so a region can follow a last line that has no line break); an end marker is a line of its own.

export const MARKER_VERSION = 1;
// Strict on purpose: a marker line the user typed into (even a space) no longer counts, so the
// region becomes theirs rather than the tool rewriting a line that holds their keystrokes.
const BEGIN = /<!-- inference-bench:begin id=(\S+) v=(\d+) hash=([0-9a-f]{12}) -->$/;
const END = /^<!-- inference-bench:end id=(\S+) -->$/;
const ANY_MARKER = /<!--\s*inference-bench:(begin|end)\b/;

/** A section id as it can stand in a marker: no spaces, nothing that could close the comment. */
export function markerId(sectionId: string): string {
  const id = sectionId.replace(/[^A-Za-z0-9._:+-]/g, '_');
  return id || '_';
}

export function contentHash(content: string): string {
  return createHash('sha256').update(normalizeEol(content)).digest('hex').slice(0, 12);
}

export function beginMarker(id: string, content: string): string {
  return `<!-- inference-bench:begin id=${id} v=${MARKER_VERSION} hash=${contentHash(content)} -->`;
}

export function endMarker(id: string): string {
  return `<!-- inference-bench:end id=${id} -->`;
}

/** True when a line of generated content would be read back as a marker; such lines are escaped. */
export function looksLikeMarker(line: string): boolean {
  return ANY_MARKER.test(line);
}

/** A begin marker paired with the end marker of the same id. */
export interface Region {
  id: string;
  /** Offset of the begin marker's `<!--`. */
  start: number;
  /** Offset just past the end marker's line break (or the end of the document). */
  end: number;
  /** Offset of the begin marker line's end (its line break follows). */
  beginLineEnd: number;
  /** The content: from after the begin marker's line break to the end marker's line start. */
  contentStart: number;
  contentEnd: number;
  beginLine: number;
  endLine: number;
  /** The content still hashes to the begin marker's hash: the tool owns it. Otherwise the user does. */
  intact: boolean;
}

/** A marker without its partner (the user deleted or broke the other one). It is the user's text. */
export interface OrphanMarker {
  id: string;
  kind: 'begin' | 'end';
  line: number;
}

export interface ParsedRegions {
  lines: Line[];
  regions: Region[];
  orphans: OrphanMarker[];
}

export function parseRegions(text: string, lines: Line[] = splitLines(text)): ParsedRegions {
  const regions: Region[] = [];
  const orphans: OrphanMarker[] = [];
  let open: { id: string; hash: string; line: number; start: number } | undefined;
  const fences = text.includes('inference-bench:') ? closedFences(text) : [];
  lines.forEach((line, index) => {
    const lineText = text.slice(line.start, line.end);
    if (!lineText.includes('inference-bench:')) return;
    // A copy of the tool's markers quoted in a code block is the user's text.
    if (fences.some((f) => index >= f.first && index <= f.last)) return;
    const begin = BEGIN.exec(lineText);
    if (begin) {
      if (open) orphans.push({ id: open.id, kind: 'begin', line: open.line });
      open = { id: begin[1], hash: begin[3], line: index, start: line.start + begin.index };
      return;
    }
    const end = END.exec(lineText);
    if (!end) return;
    if (open && open.id === end[1]) {
      const first = lines[open.line];
      const contentStart = first.next;
      const contentEnd = line.start;
      regions.push({
        id: open.id,
        start: open.start,
        end: line.next,
        beginLineEnd: first.end,
        contentStart,
        contentEnd,
        beginLine: open.line,
        endLine: index,
        intact: contentHash(text.slice(contentStart, contentEnd)) === open.hash,
      });
    } else {
      if (open) orphans.push({ id: open.id, kind: 'begin', line: open.line });
      orphans.push({ id: end[1], kind: 'end', line: index });
    }
    open = undefined;
  });
  if (open) orphans.push({ id: open.id, kind: 'begin', line: open.line });
  return { lines, regions, orphans };
}

/**
 * The user's text: everything outside the regions the tool owns, in order. The tool's one promise
 * is that no update changes this string.
 */
export function userText(text: string): string {
  const { regions } = parseRegions(text);
  let out = '';
  let at = 0;
  for (const r of regions) {
    if (!r.intact) continue;
    out += text.slice(at, r.start);
    at = r.end;
  }
  return out + text.slice(at);
}
