import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const NO_VSCODE = { name: 'vscode', message: 'Only src/vscode may import vscode.' };
/** Files matching `files` may not import a path matching any of the patterns' `regex`. */
const layers = (files, patterns) => ({
  files: [files],
  rules: { 'no-restricted-imports': ['error', { paths: [NO_VSCODE], patterns }] },
});
const layer = (files, regex, message) => layers(files, [{ regex, message }]);

const CORE_ABOVE_FRONT_ENDS = { regex: '(^|/)(cli|vscode)(/|$)', message: 'src/core is below the front ends: it never imports src/cli or src/vscode.' };
// Core's folders, lowest first (docs/ARCHITECTURE.md, "Core's inner order"): each imports only the
// folders before it (and log.ts, below them all), so core has no import cycle.
export const CORE_ORDER = ['trace', 'config', 'macro', 'micro', 'probe', 'runs', 'findings', 'campaign', 'phases', 'explain', 'compare', 'server'];
const coreFolder = (folder, index) => {
  const above = CORE_ORDER.slice(index + 1);
  const patterns = [CORE_ABOVE_FRONT_ENDS];
  if (above.length)
    patterns.push({
      regex: `^\\.\\./(${above.join('|')})(/|$)`,
      message: `src/core/${folder} comes before ${above.join(', ')} in core's order (docs/ARCHITECTURE.md): it imports none of them.`,
    });
  return layers(`src/core/${folder}/**/*.ts`, patterns);
};

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.cache/**', 'test-output/**', 'agent/**', 'simulator/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      'no-console': ['error', { allow: ['error'] }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Only the front end may talk to VS Code.
      'no-restricted-imports': ['error', { paths: [NO_VSCODE] }],
    },
  },
  // The layers (docs/ARCHITECTURE.md): arrows point down only.
  layers('src/core/*.ts', [CORE_ABOVE_FRONT_ENDS, { regex: '^\\./', message: "src/core's own files (log.ts) are below every core folder." }]),
  ...CORE_ORDER.map(coreFolder),
  layer('src/remote/**/*.ts', '(^|/)(core|cli|vscode)(/|$)', 'src/remote is below the core: it never imports src/core, src/cli or src/vscode.'),
  layer('src/shared/**/*.ts', '^\\.\\./', 'src/shared is the contract every layer uses: it imports nothing of ours outside itself.'),
  layer('webview-ui/src/**/*.ts', '(^|/)src/(core|remote|cli|vscode)(/|$)', 'The webview talks to the host through src/shared only.'),
  { files: ['src/vscode/**/*.ts', 'test/extension/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
  { files: ['src/cli/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts'], rules: { 'no-console': 'off' } },
  { files: ['bin/**/*.js', 'test/**/*.js'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['**/*.mjs', '**/*.js', '**/*.cjs'], languageOptions: { globals: { ...globals.node } } },
);
