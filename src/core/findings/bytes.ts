import { isUtf8 } from 'node:buffer';

// The findings document as bytes, so that what the tool did not write stays byte for byte: a user's
// line in Latin-1 (or any invalid UTF-8) must not come back as U+FFFD. Each byte that is not part of
// valid UTF-8 is carried as a lone low surrogate U+DC80..U+DCFF (Python's "surrogateescape"), which
// valid UTF-8 can never decode to, and written back as that same byte.

const ESCAPE_BASE = 0xdc00;

/** Length of the valid UTF-8 sequence at `i`, or 0 when the byte there starts none. */
function sequenceLength(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c < 0x80) return 1;
  const cont = (k: number) => i + k < b.length && (b[i + k] & 0xc0) === 0x80;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    // Overlong forms and UTF-16 surrogates are not valid UTF-8.
    if ((c === 0xe0 && b[i + 1] < 0xa0) || (c === 0xed && b[i + 1] >= 0xa0)) return 0;
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if ((c === 0xf0 && b[i + 1] < 0x90) || (c === 0xf4 && b[i + 1] >= 0x90)) return 0;
    return 4;
  }
  return 0;
}

export function decodeDocument(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let out = '';
  let run = 0;
  for (let i = 0; i < bytes.length;) {
    const n = sequenceLength(bytes, i);
    if (n) {
      i += n;
      continue;
    }
    out += bytes.toString('utf8', run, i) + String.fromCharCode(ESCAPE_BASE + bytes[i]);
    run = ++i;
  }
  return out + bytes.toString('utf8', run);
}

// A low surrogate right after a high one is half of a real character; alone, it is an escaped byte.
const ESCAPED = /(?<![\ud800-\udbff])[\udc80-\udcff]/g;

export function encodeDocument(text: string): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (const m of text.matchAll(ESCAPED)) {
    parts.push(Buffer.from(text.slice(at, m.index), 'utf8'), Buffer.of(m[0].charCodeAt(0) - ESCAPE_BASE));
    at = m.index! + 1;
  }
  if (!parts.length) return Buffer.from(text, 'utf8');
  parts.push(Buffer.from(text.slice(at), 'utf8'));
  return Buffer.concat(parts);
}
