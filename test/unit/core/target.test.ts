import * as assert from 'node:assert/strict';
import { parseTarget, SettingsError } from '../../../src/core/config/target';

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
