// Chart colours come from the VS Code theme's CSS variables, read again whenever the theme changes
// (VS Code swaps the body's class: vscode-dark, vscode-light, vscode-high-contrast...).

export interface ChartTheme {
  foreground: string;
  muted: string;
  grid: string;
  background: string;
  /** Flagged points (a level cut short or limited by the load generator). */
  warning: string;
  series: string[];
  highContrast: boolean;
}

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

export function readTheme(): ChartTheme {
  const highContrast = document.body.classList.contains('vscode-high-contrast') || document.body.classList.contains('vscode-high-contrast-light');
  return {
    foreground: cssVar('--vscode-editor-foreground', cssVar('--vscode-foreground', '#cccccc')),
    muted: cssVar('--vscode-descriptionForeground', '#9d9d9d'),
    grid: cssVar('--vscode-editorWidget-border', cssVar('--vscode-panel-border', '#80808040')),
    background: cssVar('--vscode-editor-background', '#1e1e1e'),
    warning: cssVar('--vscode-editorWarning-foreground', cssVar('--vscode-charts-yellow', '#cca700')),
    series: [
      cssVar('--vscode-charts-blue', '#3794ff'),
      cssVar('--vscode-charts-orange', '#d18616'),
      cssVar('--vscode-charts-green', '#89d185'),
      cssVar('--vscode-charts-red', '#f14c4c'),
      cssVar('--vscode-charts-purple', '#b180d7'),
      cssVar('--vscode-charts-yellow', '#cca700'),
      cssVar('--vscode-terminal-ansiCyan', '#11a8cd'),
      cssVar('--vscode-terminal-ansiMagenta', '#bc3fbc'),
      cssVar('--vscode-terminal-ansiBrightBlack', '#8a8a8a'),
      cssVar('--vscode-terminal-ansiBrightGreen', '#23d18b'),
      cssVar('--vscode-terminal-ansiBrightBlue', '#3b8eea'),
      cssVar('--vscode-terminal-ansiBrightYellow', '#f5f543'),
      cssVar('--vscode-terminal-ansiBrightMagenta', '#d670d6'),
      cssVar('--vscode-terminal-ansiBrightCyan', '#29b8db'),
      cssVar('--vscode-terminal-ansiGreen', '#0dbc79'),
      cssVar('--vscode-terminal-ansiWhite', '#e5e5e5'),
    ],
    highContrast,
  };
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
export function distinctColours(t: ChartTheme, n: number): string[] {
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

/** Calls `onChange` with the new theme whenever VS Code switches themes. */
export function watchTheme(onChange: (theme: ChartTheme) => void): void {
  let last = document.body.className;
  new MutationObserver(() => {
    if (document.body.className === last) return;
    last = document.body.className;
    onChange(readTheme());
  }).observe(document.body, { attributes: true, attributeFilter: ['class'] });
}
