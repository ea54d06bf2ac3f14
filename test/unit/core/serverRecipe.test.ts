import * as assert from 'node:assert/strict';
import {
  environmentInWords,
  outputTarget,
  parseUserRecipe,
  recipeDifferences,
  sameRecipe,
  startCommand,
  stopCommand,
  withUserRecipe,
} from '../../../src/core/server/recipe';
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
      // The assignments before setsid: after it they would be taken for the command to run.
      "cd '/srv/my models' && CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 HF_TOKEN=REDACTED setsid /opt/venv/bin/python -m vllm.entrypoints.openai.api_server --model moonshotai/Kimi-K2.5 -tp 8 --api-key REDACTED",
    );
    assert.equal(startCommand({ ...adopted, manager: { kind: 'systemd', unit: 'vllm.service' } }), 'sudo systemctl start vllm.service');
  });

  it('shows a whole environment as typed into the shell on the host: what it sets and unsets there, and the log it appends to', () => {
    const log = { kind: 'file' as const, target: '/srv/my models/its-own.log', path: '/srv/my models/its-own.log' };
    const whole: ServerRecipe = {
      ...adopted,
      env: { PATH: '/opt/venv/bin:/usr/bin', HOME: '/home/serve', SITE_SETTING: 'abc', HF_TOKEN: 'REDACTED', 'BASH_FUNC_f%%': '() {  true\n}' },
      env_complete: true,
      stdout: log,
      stderr: log,
    };
    const shell = { PATH: '/usr/bin', HOME: '/home/serve', SSH_CONNECTION: '127.0.0.1 5 127.0.0.1 22', HF_TOKEN: 'REDACTED' };
    assert.equal(
      startCommand(whole, shell),
      "cd '/srv/my models' && env -u SSH_CONNECTION 'BASH_FUNC_f%%=() {  true\n}' HF_TOKEN=REDACTED PATH=/opt/venv/bin:/usr/bin SITE_SETTING=abc " +
        "setsid /opt/venv/bin/python -m vllm.entrypoints.openai.api_server --model moonshotai/Kimi-K2.5 -tp 8 --api-key REDACTED >> '/srv/my models/its-own.log' 2>&1",
    );
    // Plain assignments where nothing is unset and every name is one a shell assigns.
    const { SSH_CONNECTION: _, ...sameShell } = shell;
    const { 'BASH_FUNC_f%%': __, ...plain } = whole.env;
    assert.match(
      startCommand({ ...whole, env: plain }, sameShell),
      /^cd '\/srv\/my models' && HF_TOKEN=REDACTED PATH=\/opt\/venv\/bin:\/usr\/bin SITE_SETTING=abc setsid /,
    );
    assert.equal(
      environmentInWords(whole, shell),
      'environment: all 5 variables the process had (4 set and 1 unset against the shell on the host, as the command shows); REDACTED values are filled in on the host from where the tool keeps them',
    );
    assert.equal(outputTarget(whole), 'stdout and stderr: appended to the file /srv/my models/its-own.log, as before');
    assert.equal(
      outputTarget({
        ...whole,
        stdout: { kind: 'pipe', target: 'pipe:[77]', peer: 'pid 9 (tee out.log)' },
        stderr: { kind: 'null', target: '/dev/null', path: '/dev/null' },
      }),
      "stdout: the tool's log on the host (~/.cache/inference-bench/server/server-PORT-TIME.log): it went to a pipe to pid 9 (tee out.log), which a new process cannot be connected to; stderr: /dev/null, as before",
    );
    assert.match(
      startCommand({ ...whole, stdout: { kind: 'null', target: '/dev/null', path: '/dev/null' }, stderr: log }),
      / > \/dev\/null 2>> '\/srv\/my models\/its-own.log'$/,
    );
    assert.match(outputTarget(adopted), /not recorded/);
    assert.match(environmentInWords(adopted), /only the 3 variables an older version kept/);
  });

  it('takes a recipe an older version adopted (a few variables) as the same server as its whole-environment adoption', () => {
    const whole = { ...adopted, env: { ...adopted.env, SITE_SETTING: 'abc', SHLVL: '1' }, env_complete: true };
    assert.ok(sameRecipe(adopted, whole));
    assert.ok(!sameRecipe(adopted, { ...whole, env: { ...whole.env, CUDA_VISIBLE_DEVICES: '0' } }));
    assert.ok(!sameRecipe(whole, { ...whole, env: adopted.env }), 'two whole environments are compared whole');
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
