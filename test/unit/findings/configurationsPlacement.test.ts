import * as assert from 'node:assert/strict';
import { renderSkeleton } from '../../../src/core/findings/skeleton';
import { applyFindingsUpdate } from '../../../src/core/findings/update';
import { FindingsUpdate } from '../../../src/core/findings/findingsUpdate';

// The id Compare Server Configurations gives its table (src/core/server/configurationsCompared.ts): one per comparison.
const compared: FindingsUpdate = {
  sectionId: 'configurations-20261203-101500-macro-20261203-101620-macro',
  heading: 'Server configurations compared — sim-configs',
  lines: ['**slower**: `vllm serve m --step-base-ms 9`'],
  tables: [{ id: 'configs', title: 'Configurations', columns: [{ key: 'name', label: 'Configuration', align: 'left' }], rows: [{ name: 'as-running' }] }],
};

describe("the configurations' table in the findings document", () => {
  it("goes into the tool's serving-benchmark section, never under the user's ## Notes", () => {
    const doc = renderSkeleton('bench.md') + 'my own thoughts on the run\n';
    const edit = applyFindingsUpdate(doc, compared, { now: new Date('2026-12-03T10:20:00Z') });
    const text = edit.text;
    const table = text.indexOf('Server configurations compared — sim-configs');
    const macro = text.indexOf('## Macro: serving benchmark');
    const micro = text.indexOf('## Micro: kernels and collectives');
    const notes = text.indexOf('## Notes');
    assert.ok(table > macro && table < micro, `the table is not in the macro section:\n${text}`);
    assert.ok(table < notes);
    assert.ok(text.trimEnd().endsWith('my own thoughts on the run'), "the user's notes still end the document");
  });
});
