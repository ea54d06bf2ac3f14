import * as assert from 'node:assert/strict';
import { parseUserRecipe, recipeDifferences, sameRecipe, startCommand, stopCommand, withUserRecipe } from '../../../src/core/server/recipe';
import { ServerRecipe } from '../../../src/remote/agentProtocol';

const adopted: ServerRecipe = {
  url: 'http://127.0.0.1:8000',
  argv: ['/opt/venv/bin/python', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'moonshotai/Kimi-K2.5', '-tp', '8', '--api-key', 'REDACTED'],
  cwd: '/srv/my models',
  env: { PATH: '/opt/venv/bin:/usr/bin', CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7', HF_TOKEN: 'REDACTED' },
  user: 'serve',
  manager: { kind: 'process' },
  kind: 'vllm',
  version: '0.16.0',
  identity: { pid: 4242, start_ticks: 987654 },
};

describe('server recipes as the user sees them', () => {
  it('shows the start command as it would be typed on the host, quoted, with only the variables that matter', () => {
    assert.equal(
      startCommand(adopted),
      "cd '/srv/my models' && setsid CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 HF_TOKEN=REDACTED /opt/venv/bin/python -m vllm.entrypoints.openai.api_server --model moonshotai/Kimi-K2.5 -tp 8 --api-key REDACTED",
    );
    assert.equal(startCommand({ ...adopted, manager: { kind: 'systemd', unit: 'vllm.service' } }), 'sudo systemctl start vllm.service');
  });

  it('names the exact pid and its start time in the stop command, and the bound before SIGKILL', () => {
    assert.match(stopCommand(adopted, 60), /^kill -TERM 4242 +\(only if pid 4242 still has start time 987654 .*kill -KILL 4242 after 60 s\)$/);
  });

  it('says what a restart with the profiler changes, and that the process does not make a recipe differ', () => {
    const changed = { ...adopted, argv: [...adopted.argv, '--profiler-config', '{"profiler":"torch","torch_profiler_dir":"/t"}'] };
    assert.deepEqual(recipeDifferences(adopted, changed), [`adds --profiler-config '{"profiler":"torch","torch_profiler_dir":"/t"}'`]);
    assert.deepEqual(recipeDifferences(adopted, { ...adopted, env: { ...adopted.env, VLLM_TORCH_PROFILER_DIR: '/t' } }), ['sets VLLM_TORCH_PROFILER_DIR=/t']);
    assert.ok(sameRecipe(adopted, { ...adopted, identity: { pid: 1, start_ticks: 2 }, env: { HF_TOKEN: 'REDACTED', ...adopted.env } }));
    assert.ok(!sameRecipe(adopted, changed));
  });

  it('lays a recipe the user wrote over the adopted one, and names a bad field', () => {
    const user = parseUserRecipe({ argv: ['vllm', 'serve', 'm'], env: { VLLM_LOGGING_LEVEL: 'DEBUG' } });
    const merged = withUserRecipe(adopted, user);
    assert.deepEqual(merged.argv, ['vllm', 'serve', 'm']);
    assert.equal(merged.cwd, '/srv/my models');
    assert.equal(merged.env.PATH, '/opt/venv/bin:/usr/bin');
    assert.equal(merged.env.VLLM_LOGGING_LEVEL, 'DEBUG');
    assert.throws(() => parseUserRecipe({ argv: 'vllm serve m' }), /needs "argv": the command line as a list of strings/);
    assert.throws(() => parseUserRecipe({ argv: ['vllm'], env: { A: 1 } }), /"env" maps variable names to string values/);
  });
});
