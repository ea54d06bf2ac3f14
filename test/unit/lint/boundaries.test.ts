import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ESLint, Linter } from 'eslint';

const ROOT = join(__dirname, '..', '..', '..');
const CONFIG = join(ROOT, 'eslint.config.mjs');
const TYPE_AWARE = ['@typescript-eslint/no-floating-promises', '@typescript-eslint/no-misused-promises', '@typescript-eslint/await-thenable'];

// The planted files are not on disk (or sit in a folder TypeScript's globs skip), so they are outside
// the TypeScript program the type-aware rules read; those rules are off here and tested on a file that is in it.
const planted = (rules: Linter.RulesRecord = {}) =>
  new ESLint({
    cwd: ROOT,
    overrideConfigFile: CONFIG,
    overrideConfig: {
      files: ['src/**/*.ts'],
      languageOptions: { parserOptions: { projectService: false } },
      rules: { ...Object.fromEntries(TYPE_AWARE.map((rule) => [rule, 'off'])), ...rules },
    },
  });
// no-cycle reads every file an import leads to (all of src/vscode from its extension.ts), which takes
// seconds; the boundaries are tested without it, the cycles below with it.
const untyped = planted({ 'import-x/no-cycle': 'off' });

const lint = async (eslint: ESLint, filePath: string, code: string): Promise<Linter.LintMessage[]> => {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, filePath) });
  return result.messages;
};
const said = (messages: Linter.LintMessage[]) => messages.map((m) => `${m.ruleId}: ${m.message}`).join('\n');

/** Asserts that `rule` reports the planted import and that its message says `why`. */
async function refused(filePath: string, specifier: string, rule: string, why: RegExp): Promise<void> {
  const messages = await lint(untyped, filePath, `import * as planted from '${specifier}';\nexport const used = planted;\n`);
  const hit = messages.find((m) => m.ruleId === rule);
  assert.ok(hit, `${filePath} importing '${specifier}' should break ${rule}; the linter said:\n${said(messages) || '(nothing)'}`);
  assert.match(hit.message, why);
}

describe('the linter holds the layers where imports resolve, however they are spelled', function () {
  // The first lint loads the config and its plugins: seconds on a busy machine.
  this.timeout(60_000);
  const paths = 'import-x/no-restricted-paths';

  it('refuses src/vscode in the CLI', () => refused('src/cli/x.ts', '../vscode/extension', paths, /src\/cli stands without VS Code/));

  it('refuses a front end in core, spelled through a deep relative path', () =>
    refused('src/core/explain/x.ts', '../../../src/core/../cli/main', paths, /src\/core is below the front ends/));

  it("refuses a core folder importing one after it in core's order", () =>
    refused('src/core/trace/x.ts', '../server/serverChange', paths, /src\/core\/trace comes before .*server in core's order/));

  it("refuses the same climb spelled from core's root (../../core/explain/budget)", () =>
    refused('src/core/trace/x.ts', '../../core/explain/budget', paths, /src\/core\/trace comes before .*explain/));

  it('refuses core in src/remote, src/core in src/shared and the host in the webview', async () => {
    await refused('src/remote/x.ts', '../core/log', paths, /src\/remote is below the core/);
    await refused('src/shared/x.ts', '../core/log', paths, /src\/shared is the contract/);
    await refused('webview-ui/src/x.ts', '../../src/core/log', paths, /through src\/shared only/);
  });

  it('refuses vscode outside src/vscode', () => refused('src/core/x.ts', 'vscode', 'no-restricted-imports', /Only src\/vscode may import vscode/));

  it('passes imports that point down: an earlier core folder, log.ts, src/shared', async () => {
    const code = [
      "import { silentLogger } from '../log';",
      "import { formatBytes } from '../../shared/table';",
      "import * as steps from '../trace/steps';",
      'export const used = [silentLogger, formatBytes, steps];',
      '',
    ].join('\n');
    assert.equal(said(await lint(untyped, 'src/core/explain/x.ts', code)), '');
  });
});

describe('the linter finds import cycles', function () {
  this.timeout(60_000);
  // no-cycle follows imports through the files on disk, so the cycle is two real files, in a folder whose
  // leading dot keeps it out of TypeScript's include globs; removed after the test.
  let dir: string | undefined;
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reports two files of src that import each other', async () => {
    dir = mkdtempSync(join(ROOT, 'src', '.lint-cycle-'));
    writeFileSync(join(dir, 'a.ts'), "import { b } from './b';\nexport const a = (): number => b() + 1;\n");
    writeFileSync(join(dir, 'b.ts'), "import { a } from './a';\nexport const b = (): number => a() - 1;\n");
    const messages = await lint(planted(), relative(ROOT, join(dir, 'a.ts')), "import { b } from './b';\nexport const a = (): number => b() + 1;\n");
    assert.ok(
      messages.some((m) => m.ruleId === 'import-x/no-cycle'),
      `a.ts <-> b.ts should break import-x/no-cycle; the linter said:\n${said(messages) || '(nothing)'}`,
    );
  });
});

describe('the linter reads types in src', () => {
  it('reports a promise nobody awaits', async function () {
    // Building the TypeScript program takes seconds.
    this.timeout(120_000);
    const typed = new ESLint({ cwd: ROOT, overrideConfigFile: CONFIG });
    // src/core/log.ts is in the program; the linter reads this text in its place.
    const code = 'export async function settle(): Promise<void> {}\nexport function forget(): void {\n  settle();\n}\n';
    const messages = await lint(typed, 'src/core/log.ts', code);
    assert.ok(
      messages.some((m) => m.ruleId === '@typescript-eslint/no-floating-promises'),
      `an unawaited call should break no-floating-promises; the linter said:\n${said(messages) || '(nothing)'}`,
    );
  });
});
