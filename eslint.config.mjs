import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const ROOT = import.meta.dirname;
const NO_VSCODE = { name: 'vscode', message: 'Only src/vscode may import vscode.' };

// Core's folders, lowest first (docs/ARCHITECTURE.md, "Core's inner order"): each imports only the
// folders before it (and log.ts, below them all), so core has no import cycle.
export const CORE_ORDER = ['trace', 'config', 'macro', 'micro', 'probe', 'runs', 'findings', 'campaign', 'phases', 'explain', 'compare', 'server'];
const coreFolder = (folder, index) => {
  const below = CORE_ORDER.slice(0, index);
  const above = CORE_ORDER.slice(index + 1);
  const place = above.length ? `comes before ${above.join(', ')}` : 'comes last';
  return {
    target: `src/core/${folder}`,
    // Everything of core but the folder itself, the ones before it and log.ts; a new folder too, until it has its place.
    from: 'src/core',
    except: [folder, ...below, 'log.ts'].map((f) => `./${f}`),
    message: `src/core/${folder} ${place} in core's order (docs/ARCHITECTURE.md): of core it imports only ${[...below, 'log.ts'].join(', ')}.`,
  };
};

// The layers (docs/ARCHITECTURE.md): arrows point down only. Each zone is checked on where an import
// resolves, however it is spelled (`../../core/cli/x` and `../cli/x` are the same file).
const ZONES = [
  { target: 'src/core', from: ['src/cli', 'src/vscode'], message: 'src/core is below the front ends: it never imports src/cli or src/vscode.' },
  { target: 'src/core/*.ts', from: 'src/core', message: "src/core's own files (log.ts) are below every core folder: they import nothing else of core." },
  ...CORE_ORDER.map(coreFolder),
  {
    target: 'src/remote',
    from: ['src/core', 'src/cli', 'src/vscode'],
    message: 'src/remote is below the core: it never imports src/core, src/cli or src/vscode.',
  },
  {
    target: 'src/shared',
    from: '.',
    except: ['./src/shared', './node_modules'],
    message: 'src/shared is the contract every layer uses: it imports nothing of ours outside itself.',
  },
  {
    target: 'webview-ui/src',
    from: '.',
    except: ['./src/shared', './webview-ui', './node_modules'],
    message: 'The webview talks to the host through src/shared only.',
  },
  { target: 'src/cli', from: 'src/vscode', message: 'src/cli stands without VS Code: it never imports src/vscode (the front ends share src/core instead).' },
  { target: 'src/vscode', from: 'src/cli', message: 'src/vscode never imports src/cli: the front ends share src/core instead.' },
];

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
  {
    files: ['src/**/*.ts', 'webview-ui/src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // Without these, import-x reads only .js files and no-cycle sees no TypeScript import at all.
      'import-x/extensions': ['.ts'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: `${ROOT}/tsconfig.json` })],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { basePath: ROOT, zones: ZONES }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    files: ['webview-ui/src/**/*.ts'],
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: `${ROOT}/webview-ui/tsconfig.json` })] },
  },
  // Promises that nobody awaits lose their errors; these rules need the types, so they read the program.
  {
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: ROOT } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  { files: ['src/vscode/**/*.ts', 'test/extension/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
  { files: ['src/cli/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts'], rules: { 'no-console': 'off' } },
  { files: ['bin/**/*.js', 'test/**/*.js'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['**/*.mjs', '**/*.js', '**/*.cjs'], languageOptions: { globals: { ...globals.node } } },
);
