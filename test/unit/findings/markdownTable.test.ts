import * as assert from 'node:assert/strict';
import MarkdownIt from 'markdown-it';
import { displayWidth } from '../../../src/core/findings/displayWidth';
import { renderMarkdownTable } from '../../../src/core/findings/markdownTable';
import { ResultTable } from '../../../src/shared/table';

const macro: ResultTable = {
  id: 'macro-levels',
  title: 'Serving by concurrency',
  columns: [
    { key: 'c', label: 'concurrency', digits: 0 },
    { key: 'ttft', label: 'TTFT p50 (ms)', digits: 1 },
    { key: 'tput', label: 'output tok/s', digits: 1 },
  ],
  rows: [
    { c: 1, ttft: 41.234, tput: 57.06 },
    { c: 64, ttft: 812.5, tput: 2210.44 },
    { c: 128, ttft: null, tput: Number.NaN },
  ],
};

describe('markdown tables for the findings document', () => {
  it('lines up every pipe in a plain-text editor and right-aligns numbers', () => {
    const lines = renderMarkdownTable(macro).split('\n');
    assert.equal(lines.length, 5);
    const pipes = (l: string) => [...l].flatMap((ch, i) => (ch === '|' ? [i] : []));
    for (const l of lines) assert.deepEqual(pipes(l), pipes(lines[0]));
    assert.match(lines[1], /^\| -+: \| -+: \| -+: \|$/);
    assert.equal(lines[3], '|          64 |         812.5 |       2210.4 |');
    assert.match(lines[4], /\| +— \| +— \|$/, 'missing and non-finite values show as a dash');
  });

  it('is read back by markdown-it as the same table, pipes in cells included', () => {
    const table: ResultTable = {
      id: 't',
      title: 'Top kernels',
      columns: [
        { key: 'name', label: 'kernel', align: 'left' },
        { key: 'ms', label: 'ms' },
      ],
      rows: [
        { name: 'a|b kernel', ms: 1.5 },
        { name: 'line\nbreak', ms: 2 },
      ],
    };
    const html = new MarkdownIt().render(renderMarkdownTable(table));
    assert.match(html, /<td>a\|b kernel<\/td>/);
    assert.match(html, /<td>line break<\/td>/);
    assert.match(html, /<th style="text-align:right">ms<\/th>/);
  });

  it('pads by display width so CJK, emoji and accents keep the columns straight', () => {
    assert.equal(displayWidth('GEMM'), 4);
    assert.equal(displayWidth('注意力'), 6);
    assert.equal(displayWidth('🚀'), 2);
    assert.equal(displayWidth('é'), 1);
    assert.equal(displayWidth('e\u0301'), 1, 'a combining accent takes no column');
    const table: ResultTable = {
      id: 't',
      title: 'Kernels',
      columns: [
        { key: 'name', label: 'category', align: 'left' },
        { key: 'ms', label: 'ms / step' },
      ],
      rows: [
        { name: '注意力', ms: 1.25 },
        { name: 'all-reduce 🚀', ms: 11.17 },
        { name: 'café', ms: 0.5 },
      ],
    };
    const lines = renderMarkdownTable(table).split('\n');
    const widths = lines.map(displayWidth);
    assert.ok(
      widths.every((w) => w === widths[0]),
      `rows of unequal display width: ${widths.join(', ')}`,
    );
  });

  it('left-aligns text columns when the table does not say, and keeps a column still empty on the right', () => {
    const table: ResultTable = {
      id: 't',
      title: '',
      columns: [
        { key: 'k', label: 'kind' },
        { key: 'v', label: 'value' },
        { key: 'cpu', label: 'CPU' },
      ],
      rows: [{ k: 'gemm', v: 3, cpu: null }],
    };
    const lines = renderMarkdownTable(table).split('\n');
    assert.equal(lines[1], '| ---- | ----: | --: |');
    assert.equal(lines[2], '| gemm |  3.00 |   — |');
  });
});
