import * as assert from 'node:assert/strict';
import { connectClusterNodes } from '../../../src/core/campaign/phaseContext';
import { RunnablePhase } from '../../../src/core/campaign/runnablePhase';
import { clusterNodes, describeTarget, isCluster, parseTarget, SettingsError, Target } from '../../../src/core/config/target';
import { DeployedAgent } from '../../../src/remote/agentDeploy';
import { Transport } from '../../../src/remote/transport';

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

  describe("a phase's cluster connections (the CLI and the extension build them alike)", () => {
    // Stand-ins for what the connection layer hands back: only their identity matters here.
    const connection = (host: string) => ({ transport: { host } as unknown as Transport, agent: { host } as unknown as DeployedAgent });
    const connectAll = async (t: Target, phase: RunnablePhase) => {
      const asked: string[] = [];
      const nodes = await connectClusterNodes(t, phase, connection(t.host ?? ''), async (node) => {
        asked.push(node.host!);
        return connection(node.host!);
      });
      return { asked, nodes };
    };

    it('connects every other host of a cluster in order, the head first with its own connection', async () => {
      const t = parseTarget({ name: 'k2', nodes: ['node-a', 'node-b', 'node-c'] });
      const { asked, nodes } = await connectAll(t, 'micro');
      assert.deepEqual(asked, ['node-b', 'node-c']);
      assert.deepEqual(
        nodes?.map((n) => [n.target.name, (n.transport as unknown as { host: string }).host]),
        [
          ['k2', 'node-a'],
          ['k2/node-b', 'node-b'],
          ['k2/node-c', 'node-c'],
        ],
      );
    });

    it('connects no other host for the macro phase, for one host, or for a "nodes" list naming one host', async () => {
      const cluster = parseTarget({ name: 'k2', nodes: ['node-a', 'node-b'] });
      assert.deepEqual(await connectAll(cluster, 'macro'), { asked: [], nodes: undefined });
      assert.deepEqual(await connectAll(parseTarget({ name: 'b6000', host: 'gpu-box' }), 'profile'), { asked: [], nodes: undefined });
      assert.deepEqual(await connectAll(parseTarget({ name: 'one', nodes: ['node-a'] }), 'probe'), { asked: [], nodes: undefined });
    });

    it('stops at the first host that cannot be reached, saying which', async () => {
      const t = parseTarget({ name: 'k2', nodes: ['node-a', 'node-b', 'node-c'] });
      const asked: string[] = [];
      await assert.rejects(
        connectClusterNodes(t, 'probe', connection('node-a'), async (node) => {
          asked.push(node.host!);
          throw new Error(`${node.host}: Permission denied (publickey)`);
        }),
        /node-b: Permission denied/,
      );
      assert.deepEqual(asked, ['node-b']);
    });
  });
});
