import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { shellJoin } from '../../../src/remote/shellQuote';

describe('shell quoting of remote arguments', () => {
  const hostile = ["it's", '$(touch /tmp/pwned)', '`id`', 'a b\tc\nd', '"; rm -rf / #', '$HOME', '*', '', '\\', "'", '--flag=$x', 'ünï©ødé'];

  it('hands every hostile string to the program unchanged through a real shell', () => {
    const printed = execFileSync('sh', ['-c', `printf '%s\\0' ${shellJoin(hostile)}`]).toString('utf8');
    assert.deepEqual(printed.split('\0').slice(0, -1), hostile);
  });
});
