// Colours that tell chart series apart, derived from the theme's own colours. No DOM here, so that
// the unit tests run it in plain Node with the colours a theme resolves to.

/** What the palette needs of a theme: its background, foreground and series colours. */
export interface PaletteInput {
  background: string;
  foreground: string;
  series: string[];
}

type Rgb = [number, number, number];

function parseColour(c: string): Rgb | undefined {
  const hex = /^#([0-9a-f]{3,8})$/i.exec(c.trim());
  if (hex) {
    const h = hex[1].length <= 4 ? [...hex[1].slice(0, 3)].map((x) => x + x).join('') : hex[1].slice(0, 6);
    return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)) as Rgb;
  }
  const rgb = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)/i.exec(c.trim());
  return rgb ? [Number(rgb[1]), Number(rgb[2]), Number(rgb[3])] : undefined;
}

function luminance([r, g, b]: Rgb): number {
  const lin = (v: number) => {
    const x = v / 255;
    return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

function contrast(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

const hex = (c: Rgb) => `#${c.map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;

/**
 * `n` colours that all differ, from the theme's palette: its colours with the duplicates a theme
 * maps to one value and those too faint on the background left out (white on a light theme), then,
 * when more are needed, the same hues blended halfway towards the background and then the foreground.
 */
export function distinctColoursOf(t: PaletteInput, n: number): string[] {
  const bg = parseColour(t.background) ?? [30, 30, 30];
  const fg = parseColour(t.foreground) ?? [204, 204, 204];
  const base: Rgb[] = [];
  for (const c of t.series) {
    const rgb = parseColour(c);
    if (!rgb || contrast(rgb, bg) < 1.6) continue;
    // Two hues closer than this are one colour to the eye.
    if (base.some((b) => Math.hypot(b[0] - rgb[0], b[1] - rgb[1], b[2] - rgb[2]) < 40)) continue;
    base.push(rgb);
  }
  if (!base.length) base.push(fg);
  const out: string[] = [];
  const seen = new Set<string>();
  for (let round = 0; out.length < n && round < 8; round++) {
    const towards = round % 2 === 1 ? bg : fg;
    const amount = round === 0 ? 0 : 0.25 + 0.12 * Math.floor((round - 1) / 2);
    for (const b of base) {
      if (out.length >= n) break;
      const c = hex(b.map((v, i) => v + (towards[i] - v) * amount) as Rgb);
      if (!seen.has(c)) {
        seen.add(c);
        out.push(c);
      }
    }
  }
  return out;
}
