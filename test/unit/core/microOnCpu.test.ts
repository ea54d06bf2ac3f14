import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingsUpdate } from '../../../src/core/campaign/phaseContext';
import { silentLogger } from '../../../src/core/log';
import { runMicroPhase } from '../../../src/core/phases/micro';
import { RunSummary } from '../../../src/shared/results';
import { replayingAgent } from '../../support/replayAgent';

// A micro run's events as agent/infbench_agent/micro/command.py sends them on a host without a GPU, the
// device named as the host's processor is; replayed, since the point is how the run is labelled.
const device = 'AMD EPYC 9654 96-Core Processor';
const events = [
  { type: 'micro.point', kind: 'peak', point: { what: 'copy', tbps: 0.05, us: 100, device, device_kind: 'cpu' } },
  { type: 'micro.point', kind: 'gemm', point: { shape: 'gate_up', m: 1, n: 64, k: 64, us: 12.5, kernel: 'torch.matmul' } },
  {
    type: 'result',
    result: { device: { name: device, kind: 'cpu' }, model: null, timing: 'wall-clock loops', allreduce: null, points: [] },
  },
  { type: 'done', ok: true },
];

describe('a micro run on a CPU', () => {
  it('says CPU only in its headline and findings from the kind of its device, whatever the device is called', async () => {
    const seen: RunSummary[] = [];
    let findings: FindingsUpdate | undefined;
    await runMicroPhase(
      {
        target: { name: 't', kind: 'local', serverUrl: 'http://127.0.0.1:9', python: 'python3' },
        transport: replayingAgent(events),
        agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
        workspace: mkdtempSync(join(tmpdir(), 'ib-micro-cpu-')),
        sink: { runChanged: (r) => seen.push(r), findings: (u) => (findings = u) },
        log: silentLogger,
      },
      { m: [1] },
    );
    assert.match(seen.at(-1)?.headline ?? '', /^CPU only — gate_up M=1: 12\.5 µs/);
    assert.ok(
      findings?.lines.some((l) => l.startsWith('⚠ **CPU only**')),
      findings?.lines.join('\n'),
    );
  });
});
