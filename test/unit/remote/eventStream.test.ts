import * as assert from 'node:assert/strict';
import { AgentEventParser } from '../../../src/remote/eventStream';
import { AgentEvent } from '../../../src/remote/agentProtocol';

function collect() {
  const events: AgentEvent[] = [];
  const noise: string[] = [];
  const parser = new AgentEventParser(
    (e) => events.push(e),
    (n) => noise.push(n),
  );
  return { events, noise, parser };
}

describe('agent event stream', () => {
  it('reassembles an event cut across chunks, even inside a multi-byte character', () => {
    const { events, parser } = collect();
    const line = Buffer.from('{"v":1,"type":"log","t":1,"level":"info","message":"µs → ms"}\n');
    const cut = line.indexOf(Buffer.from('µ')) + 1; // in the middle of the two-byte µ
    parser.push(line.subarray(0, cut));
    assert.equal(events.length, 0);
    parser.push(line.subarray(cut));
    assert.equal(events.length, 1);
    assert.equal((events[0] as { message: string }).message, 'µs → ms');
  });

  it('sets aside stray output and JSON that is not an event of this schema', () => {
    const { events, noise, parser } = collect();
    parser.push(
      'Loading weights...\n{"v":1,"type":"progress","t":1,"done":1,"total":2}\n{"not":"an event"}\n{"v":99,"type":"log"}\n{"v":1,"type":"log" BROKEN\n',
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['progress'],
    );
    assert.equal(noise.length, 4);
  });

  it('keeps a last line that has no newline when the stream ends', () => {
    const { events, parser } = collect();
    parser.push('{"v":1,"type":"done","t":1,"ok":true}');
    assert.equal(events.length, 0);
    parser.end();
    assert.deepEqual(
      events.map((e) => e.type),
      ['done'],
    );
  });
});
