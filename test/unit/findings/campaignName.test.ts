import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultFindingsDocument, gpuShortName } from '../../../src/core/findings/campaignName';
import { renderSkeleton } from '../../../src/core/findings/skeleton';

function probeRun(workspace: string, startedAt: string, model: string | undefined, gpu: string | undefined): void {
  const dir = join(workspace, '.inference-bench', 'runs', `${startedAt}-probe`);
  mkdirSync(dir, { recursive: true });
  const result = {
    host: 'box',
    gpus: { available: !!gpu, error: null, devices: gpu ? [{ index: 0, name: gpu }] : [], processes: [], topology: null },
    server: { models: model ? [{ id: model }] : [] },
  };
  writeFileSync(join(dir, 'result.json'), JSON.stringify(result));
}

describe('the findings document is named after the campaign', () => {
  let workspace: string;
  beforeEach(() => {
    workspace = mkdtempSync(join(tmpdir(), 'infbench-name-'));
  });
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  it('names Kimi-K2.5 on an RTX PRO 6000 Blackwell k25b6000bench1.md, as the original campaign was named', () => {
    probeRun(workspace, '2026-12-01_10-00-00-000', 'moonshotai/Kimi-K2.5', 'NVIDIA RTX PRO 6000 Blackwell Server Edition');
    assert.equal(defaultFindingsDocument(workspace), 'k25b6000bench1.md');
  });

  it('names another model and GPU after themselves, not after the Kimi campaign', () => {
    probeRun(workspace, '2026-12-01_10-00-00-000', 'meta-llama/Llama-3.1-70B-Instruct', 'NVIDIA H200');
    assert.equal(defaultFindingsDocument(workspace), 'l31h200bench1.md');
  });

  it('keeps the bench number the campaign reached, and the first probe names it when a second target follows', () => {
    probeRun(workspace, '2026-12-01_10-00-00-000', 'Qwen/Qwen3-8B', 'NVIDIA A100-SXM4-80GB');
    probeRun(workspace, '2026-12-01_11-00-00-000', 'moonshotai/Kimi-K2.5', 'NVIDIA H200');
    writeFileSync(join(workspace, 'q3a100bench1.md'), '# mine\n');
    writeFileSync(join(workspace, 'q3a100bench2.md'), '# mine\n');
    assert.equal(defaultFindingsDocument(workspace), 'q3a100bench2.md');
  });

  it('says cpu for a host without a GPU, and skips probes that saw neither model nor GPU', () => {
    probeRun(workspace, '2026-12-01_09-00-00-000', undefined, undefined);
    probeRun(workspace, '2026-12-01_10-00-00-000', 'sim-llama-3', undefined);
    assert.equal(defaultFindingsDocument(workspace), 's3cpubench1.md');
  });

  it("before any probe, keeps the workspace's newest findings document, or starts findings.md", () => {
    assert.equal(defaultFindingsDocument(workspace), 'findings.md');
    writeFileSync(join(workspace, 'README.md'), '# Not findings\n');
    writeFileSync(join(workspace, 'k25b6000bench1.md'), renderSkeleton('k25b6000bench1.md'));
    writeFileSync(join(workspace, 'older.md'), renderSkeleton('older.md'));
    utimesSync(join(workspace, 'older.md'), new Date('2026-01-01'), new Date('2026-01-01'));
    assert.equal(defaultFindingsDocument(workspace), 'k25b6000bench1.md');
  });

  it('reads the GPU names people write', () => {
    assert.equal(gpuShortName('NVIDIA H200'), 'h200');
    assert.equal(gpuShortName('NVIDIA GB200'), 'gb200');
    assert.equal(gpuShortName('NVIDIA L40S'), 'l40');
    assert.equal(gpuShortName('NVIDIA GeForce RTX 4090'), 'rtx4090');
    assert.equal(gpuShortName('NVIDIA RTX 6000 Ada Generation'), 'ada6000');
  });
});
