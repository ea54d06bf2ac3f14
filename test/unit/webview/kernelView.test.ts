import * as assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { BUILTIN_FAMILIES, IDLE_CATEGORY, MEMORY_CATEGORY, OTHER_CATEGORY } from '../../../src/core/trace/families';
import { profileSummaryOf } from '../../../src/core/trace/profileView';
import { distinctColoursOf as distinctColours, PaletteInput } from '../../../webview-ui/src/palette';

// The real two-rank vLLM 0.26 trace captured on an H200 (test/fixtures/traces/servers/README.md).
const dir = join(__dirname, '..', '..', 'fixtures', 'traces', 'servers', 'vllm-0.26-piecewise-tp2');
const rankFiles = readdirSync(dir)
  .filter((f) => f.includes('rank'))
  .map((f) => join(dir, f));

describe("the kernel breakdown view's figures", () => {
  it("shows the headline's percentages for all ranks, and each rank's own kernels for the per-rank view", async () => {
    const b = await analyzeTraceFiles(rankFiles);
    const p = profileSummaryOf(b);
    const top = b.overall.categories.filter((c) => c.category !== 'idle')[0];
    const shown = (100 * p.overall!.by_category[top.category]) / p.overall!.step_us;
    assert.equal(shown.toFixed(1), top.sharePct.toFixed(1));
    assert.ok(b.headline.includes(`${top.category} ${shown.toFixed(1)}%`), `headline "${b.headline}" vs ${shown.toFixed(1)}%`);
    assert.deepEqual(
      p.kernelsByRank!.map((k) => k.rank),
      [0, 1],
    );
    for (const { rank, kernels } of p.kernelsByRank!) {
      const r = b.ranks.find((x) => x.rank === rank)!;
      assert.ok(kernels.every((k) => k.rank === rank));
      const first = r.topKernels[0];
      const mine = kernels.find((k) => k.name === first.name)!;
      assert.ok(Math.abs(mine.total_us - (first.totalMs * 1000) / r.decode.count) < 1e-6);
    }
  });
});

describe('category colours', () => {
  const categories = [...new Set([...BUILTIN_FAMILIES.map((f) => f.category), MEMORY_CATEGORY, OTHER_CATEGORY, IDLE_CATEGORY])];
  // The palette as readTheme() resolves it under code-server's Dark Modern and Light Modern themes.
  const series = (light: boolean) =>
    light
      ? [
          '#1a85ff',
          '#d18616',
          '#388a34',
          '#e51400',
          '#652d90',
          '#bf8803',
          '#0598bc',
          '#bc05bc',
          '#666666',
          '#14ce14',
          '#0451a5',
          '#b5ba00',
          '#bc05bc',
          '#0598bc',
          '#00bc00',
          '#555555',
        ]
      : [
          '#3794ff',
          '#d18616',
          '#89d185',
          '#f14c4c',
          '#b180d7',
          '#cca700',
          '#11a8cd',
          '#bc3fbc',
          '#666666',
          '#23d18b',
          '#3b8eea',
          '#f5f543',
          '#d670d6',
          '#29b8db',
          '#0dbc79',
          '#e5e5e5',
        ];
  for (const light of [false, true]) {
    it(`gives every one of the ${categories.length} categories its own colour, visible on the ${light ? 'light' : 'dark'} background`, () => {
      const theme: PaletteInput = { foreground: light ? '#3b3b3b' : '#cccccc', background: light ? '#ffffff' : '#1f1f1f', series: series(light) };
      const colours = distinctColours(theme, categories.length);
      assert.equal(colours.length, categories.length);
      assert.equal(new Set(colours).size, categories.length, `repeated: ${colours.join(' ')}`);
      assert.ok(!colours.includes(theme.background));
    });
  }
});
