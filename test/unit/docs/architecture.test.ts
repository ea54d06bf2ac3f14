import * as assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** Paths a document names in backticks (words with a slash: `src/core/trace/steps.ts`). */
function namedPaths(text: string): string[] {
  const found = [...text.matchAll(/`([A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.<>-]+)+\/?)`/g)].map((m) => m[1]);
  // Patterns with placeholders (`nodes/<n>-<host>/`) and run-time folders are not files of the repository.
  return found.filter((p) => !p.includes('<') && !p.startsWith('.inference-bench') && !p.startsWith('dist/') && !p.startsWith('nodes/'));
}

describe('the repository explains itself', () => {
  for (const doc of ['docs/ARCHITECTURE.md', 'CONTRIBUTING.md']) {
    it(`every file and folder ${doc} names exists`, () => {
      const paths = namedPaths(read(doc));
      assert.ok(paths.length >= 5, `${doc} names files`);
      const missing = paths.filter((p) => !existsSync(join(ROOT, p)));
      assert.deepEqual(missing, [], `${doc} names paths that are not in the repository`);
    });
  }

  it('the linter cites docs/ARCHITECTURE.md, which exists', () => {
    assert.match(read('eslint.config.mjs'), /docs\/ARCHITECTURE\.md/);
    assert.ok(existsSync(join(ROOT, 'docs', 'ARCHITECTURE.md')));
  });

  it("every folder of src/core has its place in the linter's order, and the document lists them in that order", async () => {
    const { CORE_ORDER } = (await import(join(ROOT, 'eslint.config.mjs'))) as { CORE_ORDER: string[] };
    const folders = readdirSync(join(ROOT, 'src', 'core')).filter((f) => statSync(join(ROOT, 'src', 'core', f)).isDirectory());
    assert.deepEqual([...CORE_ORDER].sort(), folders.sort(), 'a new core folder needs its place in CORE_ORDER (eslint.config.mjs)');
    const table = read('docs/ARCHITECTURE.md').split("### Core's inner order")[1].split('\n## ')[0];
    const listed = [...table.matchAll(/^\| (`[a-z]+`(?:, `[a-z]+`)*) \|/gm)].flatMap((m) => [...m[1].matchAll(/`([a-z]+)`/g)].map((x) => x[1]));
    assert.deepEqual(listed, CORE_ORDER);
  });
});
