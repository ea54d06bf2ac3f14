import * as assert from 'node:assert/strict';
import { clusterNodes, describeTarget, isCluster, parseTarget, SettingsError } from '../../../src/core/config/target';

describe('target settings', () => {
  it('reads an SSH alias with defaults for the server URL and interpreter', () => {
    const t = parseTarget({ name: 'b6000', host: 'gpu-box' });
    assert.equal(t.kind, 'ssh');
    assert.equal(t.serverUrl, 'http://127.0.0.1:8000');
    assert.equal(t.python, 'python3');
  });

  it('accepts a container prefix as a string or an argv list', () => {
    assert.deepEqual(parseTarget({ name: 'a', host: 'h', commandPrefix: 'docker exec -i vllm' }).commandPrefix, ['docker', 'exec', '-i', 'vllm']);
    assert.deepEqual(parseTarget({ name: 'a', host: 'h', commandPrefix: ['docker', 'exec', '-i', 'my vllm'] }).commandPrefix, [
      'docker',
      'exec',
      '-i',
      'my vllm',
    ]);
  });

  it('names the field that is wrong', () => {
    assert.throws(
      () => parseTarget({ host: 'h' }),
      (e: Error) => e instanceof SettingsError && /"name" is missing/.test(e.message),
    );
    assert.throws(() => parseTarget({ name: 'a', kind: 'ssh' }), /needs "host"/);
    assert.throws(() => parseTarget({ name: 'a', host: 'h', port: 70000 }), /"port" must be a number/);
    assert.throws(() => parseTarget({ name: 'a', host: 'h', serverUrl: 'not a url' }), /"serverUrl" is not a URL/);
    assert.throws(() => parseTarget('gpu-box'), /must be an object/);
  });
});

describe('cluster targets', () => {
  it('reads the hosts of a cluster, the head first, each a single-host target of its own', () => {
    const t = parseTarget({
      name: 'k2-2nodes',
      nodes: ['node-a', 'ops@node-b', { host: 'node-c', port: 2222 }],
      python: '/opt/venv/bin/python3',
      commandPrefix: ['docker', 'exec', '-i', 'vllm'],
    });
    assert.equal(isCluster(t), true);
    // The head stands for the cluster in the single-host phases: its host is the target's.
    assert.deepEqual([t.kind, t.host, t.port, t.user], ['ssh', 'node-a', undefined, undefined]);
    const nodes = clusterNodes(t);
    assert.deepEqual(
      nodes.map((n) => [n.name, n.host, n.port, n.user]),
      [
        ['k2-2nodes', 'node-a', undefined, undefined],
        ['k2-2nodes/node-b', 'node-b', undefined, 'ops'],
        ['k2-2nodes/node-c', 'node-c', 2222, undefined],
      ],
    );
    for (const n of nodes) assert.deepEqual([n.python, n.commandPrefix, n.serverUrl], [t.python, t.commandPrefix, t.serverUrl]);
    assert.equal(describeTarget(t), '3 hosts: node-a, ops@node-b, node-c:2222');
  });

  it('a cluster-wide user fills in the hosts that name none', () => {
    const t = parseTarget({ name: 'c', nodes: ['a', 'root@b'], user: 'svc', rendezvousAddr: '10.0.0.1' });
    assert.deepEqual(
      clusterNodes(t).map((n) => n.user),
      ['svc', 'root'],
    );
    assert.equal(t.rendezvousAddr, '10.0.0.1');
  });

  it('a single host is its own one node', () => {
    const t = parseTarget({ name: 'b6000', host: 'gpu-box' });
    assert.equal(isCluster(t), false);
    assert.deepEqual(clusterNodes(t), [t]);
  });

  it('says what is wrong with a cluster setting', () => {
    assert.throws(() => parseTarget({ name: 'c', nodes: [] }), /"nodes" must be a list of hosts such as \["node-a", "node-b"\]/);
    assert.throws(() => parseTarget({ name: 'c', nodes: 'node-a,node-b' }), /"nodes" must be a list/);
    assert.throws(() => parseTarget({ name: 'c', nodes: ['a', 'a'] }), /node a is listed twice/);
    assert.throws(() => parseTarget({ name: 'c', nodes: ['a', { host: 'b', port: 0 }] }), /node 2: "port" must be a number/);
    assert.throws(() => parseTarget({ name: 'c', nodes: ['a', 42] }), /node 2 must be a host alias/);
    assert.throws(() => parseTarget({ name: 'c', nodes: ['a'], host: 'b' }), /not also "host"/);
    assert.throws(() => parseTarget({ name: 'c', nodes: ['a'], kind: 'local' }), /cluster of SSH hosts/);
    assert.throws(() => parseTarget({ name: 'c', nodes: ['a'], port: 22 }), /each node's "port"/);
  });
});
