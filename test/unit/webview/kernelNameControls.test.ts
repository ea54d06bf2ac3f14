import * as assert from 'node:assert/strict';
import { shortKernelName } from '../../../webview-ui/src/views/profile';

describe('kernel names in the profile view', () => {
  it('shows control characters and bidi overrides of a name from a trace as U+FFFD', () => {
    assert.equal(shortKernelName('void \u001b]0;x\u0007evil_\u202ekernel<int>(int)'), '\ufffd]0;x\ufffdevil_\ufffdkernel<…>');
  });
});
