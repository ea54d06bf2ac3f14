import * as assert from 'node:assert/strict';
import { decodeDocument, encodeDocument } from '../../../src/core/findings/bytes';
import { Random } from './random';

describe('findings document bytes', () => {
  it('reads and writes back any bytes unchanged, valid UTF-8 or not', () => {
    const rand = new Random(7);
    const pieces = [[0xe9], [0xc3, 0xa9], [0xe2, 0x82], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xed, 0xa0, 0x80], [0xff], [0x0a], [0x41], [0xc0, 0xaf]];
    for (let n = 0; n < 500; n++) {
      const bytes = Buffer.from(Array.from({ length: rand.int(40) }, () => rand.pick(pieces)).flat());
      assert.deepEqual(encodeDocument(decodeDocument(bytes)), bytes, bytes.toString('hex'));
    }
  });

  it('reads valid UTF-8 as the text it is', () => {
    assert.equal(decodeDocument(Buffer.from('8× H200 😀\n', 'utf8')), '8× H200 😀\n');
    assert.deepEqual(encodeDocument('8× H200 😀\n'), Buffer.from('8× H200 😀\n', 'utf8'));
  });
});
