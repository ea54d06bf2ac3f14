import * as assert from 'node:assert/strict';
import { startCommand } from '../../../src/core/server/recipe';
import { consentDetail } from '../../../src/core/server/consentText';
import { ServerRecipe } from '../../../src/remote/agentProtocol';

// A server started from a conda shell in tmux: dozens of variables the agent's SSH shell does not have.
const site = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`SITE_SETTING_${i}`, `/opt/site/${'x'.repeat(30)}/${i}`]));
const recipe: ServerRecipe = {
  url: 'http://127.0.0.1:8000',
  argv: ['/opt/venv/bin/vllm', 'serve', 'moonshotai/Kimi-K2.5', '--tensor-parallel-size', '8', '--port', '8000'],
  cwd: '/srv/kimi',
  env: { PATH: '/usr/bin', ...site },
  env_complete: true,
  user: 'ml',
  manager: { kind: 'process' },
  kind: 'vllm',
  version: '0.11.0',
  identity: { pid: 4242, start_ticks: 99 },
  stdout: { kind: 'file', target: '/srv/kimi/server.log', path: '/srv/kimi/server.log' },
  stderr: { kind: 'file', target: '/srv/kimi/server.log', path: '/srv/kimi/server.log' },
};
const WHERE = 'the output "Inference Bench: Server"';

describe("a server change's consent text", () => {
  it('shows a start that sets forty variables with its folder, command line and log, short enough for a dialog', () => {
    const command = startCommand(recipe, { PATH: '/usr/bin' });
    assert.ok(command.length > 2000, 'the whole command carries every variable');
    const { shown, whole } = consentDetail({ kind: 'restore', title: 'Put the original back', commands: [command], changes: [] }, WHERE);
    assert.ok(whole.includes(command), 'the whole text keeps the exact command');
    assert.ok(shown.length < 800, `the dialog's text is ${shown.length} characters`);
    assert.match(shown, /^\$ cd \/srv\/kimi && /m, 'the folder it starts in');
    assert.match(shown, /vllm serve moonshotai\/Kimi-K2\.5 --tensor-parallel-size 8 --port 8000/, 'the command line itself');
    assert.match(shown, /server\.log 2>&1$/m, 'where its output goes');
    assert.ok(shown.includes(`the whole command is in ${WHERE}`), 'says where the whole command is');
  });

  it('shows a short command and a few changes whole', () => {
    const step = {
      kind: 'restart' as const,
      title: 't',
      commands: ['kill -TERM 1', 'cd /a && vllm serve m'],
      changes: ['adds --enforce-eager'],
      estimateS: 42,
    };
    const { shown, whole } = consentDetail(step, WHERE);
    assert.equal(shown, whole);
    assert.match(shown, /The last start of this recipe took 42 s\./);
  });

  it('lists the first changes and counts the rest', () => {
    const changes = Array.from({ length: 30 }, (_, i) => `sets VAR_${i}`);
    const { shown, whole } = consentDetail({ kind: 'restart', title: 't', commands: ['x'], changes }, WHERE);
    assert.equal(whole.split('\n').filter((l) => l.startsWith('• sets')).length, 30);
    assert.equal(shown.split('\n').filter((l) => l.startsWith('• sets')).length, 11);
    assert.ok(shown.includes(`• … and 19 more, listed in ${WHERE}`));
  });
});
