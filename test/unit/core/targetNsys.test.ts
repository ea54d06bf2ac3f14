import * as assert from 'node:assert/strict';
import { parseTarget, SettingsError } from '../../../src/core/config/target';

describe("a target's Nsight Systems path", () => {
  it('keeps the nsys the user names for the host, and leaves it to the agent to find when empty', () => {
    const named = parseTarget({ name: 'gpu', host: 'gpu', nsys: ' /opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys ' });
    assert.equal(named.nsys, '/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys');
    assert.equal(parseTarget({ name: 'gpu', host: 'gpu', nsys: '' }).nsys, undefined);
    assert.equal(parseTarget({ name: 'gpu', host: 'gpu' }).nsys, undefined);
  });

  it('says which field is wrong when it is not a path', () => {
    assert.throws(
      () => parseTarget({ name: 'gpu', host: 'gpu', nsys: 42 }),
      (e: Error) => e instanceof SettingsError && /"nsys" must be a string/.test(e.message),
    );
  });
});
