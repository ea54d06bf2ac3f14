import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const NO_VSCODE = { name: 'vscode', message: 'Only src/vscode may import vscode.' };
/** Files matching `files` may not import a path matching `regex`. */
const layer = (files, regex, message) => ({
  files: [files],
  rules: { 'no-restricted-imports': ['error', { paths: [NO_VSCODE], patterns: [{ regex, message }] }] },
});

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
  // The layers (docs: ARCHITECTURE): arrows point down only.
  layer('src/core/**/*.ts', '(^|/)(cli|vscode)(/|$)', 'src/core is below the front ends: it never imports src/cli or src/vscode.'),
  layer('src/remote/**/*.ts', '(^|/)(core|cli|vscode)(/|$)', 'src/remote is below the core: it never imports src/core, src/cli or src/vscode.'),
  layer('src/shared/**/*.ts', '^\\.\\./', 'src/shared is the contract every layer uses: it imports nothing of ours outside itself.'),
  layer('webview-ui/src/**/*.ts', '(^|/)src/(core|remote|cli|vscode)(/|$)', 'The webview talks to the host through src/shared only.'),
  { files: ['src/vscode/**/*.ts', 'test/extension/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
  { files: ['src/cli/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts'], rules: { 'no-console': 'off' } },
  { files: ['bin/**/*.js', 'test/**/*.js'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['**/*.mjs', '**/*.js', '**/*.cjs'], languageOptions: { globals: { ...globals.node } } },
);
