// Columns of a plain-text editor that a string takes: East Asian wide characters and emoji take two,
// combining marks and joiners none. Good enough to line up tables of numbers, units and names.

const ZERO_WIDTH = /^(?:\p{Mn}|\p{Me}|[\u200b-\u200f]|[\ufe00-\ufe0f])$/u;
const WIDE = /\p{Extended_Pictographic}/u;

function isWideCodePoint(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf && cp !== 0x303f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

export function displayWidth(text: string): number {
  let width = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ZERO_WIDTH.test(ch)) continue;
    // Pictographs below U+2000 (©, ®, digits) are text-width unless followed by VS16; count them as one.
    width += isWideCodePoint(cp) || (cp >= 0x2000 && WIDE.test(ch)) ? 2 : 1;
  }
  return width;
}

export function padEndTo(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

export function padStartTo(text: string, width: number): string {
  return ' '.repeat(Math.max(0, width - displayWidth(text))) + text;
}
