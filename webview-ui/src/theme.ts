import { distinctColoursOf } from './palette';

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

/** Calls `onChange` with the new theme whenever VS Code switches themes. */
export function watchTheme(onChange: (theme: ChartTheme) => void): void {
  let last = document.body.className;
  new MutationObserver(() => {
    if (document.body.className === last) return;
    last = document.body.className;
    onChange(readTheme());
  }).observe(document.body, { attributes: true, attributeFilter: ['class'] });
}

/** `n` colours that all differ, from this theme's palette (see palette.ts). */
export function distinctColours(t: ChartTheme, n: number): string[] {
  return distinctColoursOf(t, n);
}
