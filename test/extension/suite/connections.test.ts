import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { Target } from '../../../src/core/config/target';
import { ConnectionManager, ConnectionStateChange } from '../../../src/vscode/connections/connectionManager';
import { extension } from '../helpers';

// The extension's own connection manager in a real extension host, connecting for real to this
// machine (a local target runs the agent here): two targets on one host, as when one GPU box serves
// two models on two ports. SSH targets on one host share the same way (the host key is the same).
// Local targets ask for no passphrase, so the secret store is an empty stand-in.
const noSecrets: vscode.SecretStorage = {
  get: async () => undefined,
  store: async () => undefined,
  delete: async () => undefined,
  onDidChange: new vscode.EventEmitter<vscode.SecretStorageChangeEvent>().event,
};

describe('connections shared by the targets of one host', () => {
  const log = vscode.window.createOutputChannel('Inference Bench connections test', { log: true });
  const a: Target = { name: 'box-vllm', kind: 'local', serverUrl: 'http://127.0.0.1:8000', python: 'python3' };
  const b: Target = { name: 'box-sglang', kind: 'local', serverUrl: 'http://127.0.0.1:30000', python: 'python3' };
  let manager: ConnectionManager;

  beforeEach(() => {
    manager = new ConnectionManager(noSecrets, log, join(extension().extensionPath, 'dist', 'agent.pyz'));
  });
  afterEach(() => manager.dispose());
  after(() => log.dispose());

  it('opens one connection for the host and shows it connected on both targets, the run finished', async () => {
    const changes: ConnectionStateChange[] = [];
    manager.onDidChangeState((c) => changes.push(c));
    const first = await manager.connect(a);
    const second = await manager.connect(b);
    assert.equal(manager.users(a), 2, 'both phases should hold the one host connection');
    await first.release();
    await second.release();
    // Both runs done: the idle connection stays open and reads "connected" on either target, never "connecting".
    assert.deepEqual([manager.hostState(a).state, manager.hostState(b).state], ['connected', 'connected']);
    assert.equal(new Set(changes.map((c) => c.host)).size, 1, 'state changes should name one host');
    assert.equal(changes.at(-1)?.state, 'connected');
  });

  it('keeps the host connected after its last run, however long it is left idle, so that its server is still watched', async () => {
    // A clock that runs minutes in a moment: any timer of a minute or more set while the run ends fires at
    // once (VS Code's extension host has no fake clock; waiting five real minutes would be the alternative).
    const realSetTimeout = global.setTimeout;
    const fastForward = ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      realSetTimeout(fn, (ms ?? 0) >= 60_000 ? 1 : ms, ...args)) as unknown as typeof setTimeout;
    global.setTimeout = fastForward;
    try {
      await (await manager.connect(a)).release();
    } finally {
      global.setTimeout = realSetTimeout;
    }
    await new Promise((r) => realSetTimeout(r, 200));
    assert.equal(manager.hostState(a).state, 'connected', 'the idle host was closed');
    assert.ok(manager.openChannelOf(b), 'the server watch has no connection to look through');
  });

  it('shows both targets disconnected when one of them disconnects the shared host', async () => {
    await (await manager.connect(a)).release();
    await manager.disconnectTarget(b);
    assert.deepEqual([manager.hostState(a).state, manager.hostState(b).state], ['disconnected', 'disconnected']);
  });

  it('is not left "connecting…" after a cancel while connecting', async () => {
    const cancel = new AbortController();
    const attempt = manager.connect(a, cancel.signal);
    assert.equal(manager.hostState(b).state, 'connecting', 'the other target should show its host connecting');
    cancel.abort();
    await assert.rejects(attempt, /Cancelled while connecting/);
    assert.deepEqual([manager.hostState(a).state, manager.hostState(b).state], ['disconnected', 'disconnected']);
    // The next run connects afresh.
    await (await manager.connect(b)).release();
    assert.equal(manager.hostState(a).state, 'connected');
  });

  it('keeps the host connected for the other target when one target cannot run commands there', async () => {
    const held = await manager.connect(a);
    // A command prefix that fails every command (a container that is not running, say).
    await assert.rejects(manager.connect({ ...b, commandPrefix: ['false'] }), /agent/);
    assert.equal(manager.hostState(a).state, 'connected');
    await held.release();
  });
});
