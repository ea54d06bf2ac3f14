import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

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
      'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'Only src/vscode may import vscode.' }] }],
    },
  },
  { files: ['src/vscode/**/*.ts', 'test/extension/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
  { files: ['src/cli/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts'], rules: { 'no-console': 'off' } },
  { files: ['bin/**/*.js', 'test/**/*.js'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['**/*.mjs', '**/*.js', '**/*.cjs'], languageOptions: { globals: { ...globals.node } } },
);
