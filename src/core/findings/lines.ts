/**
 * A document cut into lines without losing a byte: each line knows where its text ends and where the
 * next line starts, so CRLF, LF and lone CR documents map back to exact offsets. Line numbers agree
 * with markdown-it's token maps (it treats CRLF and lone CR as one line break too).
 */
export interface Line {
  /** Offset of the line's first character. */
  start: number;
  /** Offset just past the line's text, before its line break. */
  end: number;
  /** Offset just past the line break (equals `end` on a last line without one). */
  next: number;
}

export function splitLines(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || c === 0x0d) {
      const next = c === 0x0d && text.charCodeAt(i + 1) === 0x0a ? i + 2 : i + 1;
      lines.push({ start, end: i, next });
      start = next;
      i = next - 1;
    }
  }
  // The text after the last break is a line of its own, unless the document ends with a break.
  if (start < text.length || lines.length === 0) lines.push({ start, end: text.length, next: text.length });
  return lines;
}

/** The document's own line break (the first one it uses), so that inserted text matches it. */
export function detectEol(text: string): '\n' | '\r\n' {
  const i = text.search(/\r\n|\n/);
  return i >= 0 && text[i] === '\r' ? '\r\n' : '\n';
}

/** Line breaks made uniform, for comparing content whatever the editor's end-of-line setting. */
export function normalizeEol(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

export function isBlank(text: string, line: Line): boolean {
  return text.slice(line.start, line.end).trim() === '';
}

/** Index of the line that holds `offset` (a line break belongs to the line it ends). */
export function lineAt(lines: Line[], offset: number): number {
  let lo = 0;
  let hi = lines.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lines[mid].start <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
