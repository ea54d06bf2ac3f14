import * as assert from 'node:assert/strict';
import { AGENT_SCHEMA_VERSION, AGENT_VERSION, HelloEvent, helloProblem } from '../../../src/remote/agentProtocol';
import { AgentEventParser } from '../../../src/remote/eventStream';
import { Hinted, sayHinted } from '../../../src/shared/remedy';

const hello = (over: Partial<HelloEvent> = {}): HelloEvent => ({
  v: AGENT_SCHEMA_VERSION,
  t: 1,
  type: 'hello',
  agent_version: AGENT_VERSION,
  command: 'macro',
  pid: 1,
  python: '3.8.18',
  executable: '/usr/bin/python3',
  ...over,
});

// The problem as the CLI says it.
const said = (h: Hinted | undefined) => (h ? sayHinted(h) : '');

describe("the agent's hello, checked by the host", () => {
  it("accepts this build's agent on the oldest Python it supports", () => {
    assert.equal(helloProblem(hello(), 'macro', 'python3 on gpu-box'), undefined);
  });

  it('names the interpreter and the flag when the Python is too old', () => {
    assert.match(
      said(helloProblem(hello({ python: '3.7.16' }), 'macro', 'python3 on gpu-box')),
      /needs Python 3\.8 or newer; \/usr\/bin\/python3 is Python 3\.7\.16.*--python/,
    );
  });

  it('says that another build answered when the agent version differs', () => {
    assert.match(said(helloProblem(hello({ agent_version: '0.0.9' }), 'macro', 'python3 on gpu-box')), /version 0\.0\.9, this build is .*npm run build/);
  });

  it('hands a hello of another schema version over instead of dropping it as noise', () => {
    const seen: unknown[] = [];
    const noise: string[] = [];
    const parser = new AgentEventParser(
      () => assert.fail('not an event of this schema'),
      (l) => noise.push(l),
      (h) => seen.push(h),
    );
    parser.push(`${JSON.stringify({ v: AGENT_SCHEMA_VERSION + 1, type: 'hello', agent_version: '9.0.0', python: '3.12.1' })}\n`);
    assert.equal(seen.length, 1);
    assert.match(
      said(helloProblem(seen[0] as HelloEvent, 'probe', 'python3 on gpu-box')),
      new RegExp(`schema ${AGENT_SCHEMA_VERSION + 1} \\(agent 9\\.0\\.0\\), this build speaks schema ${AGENT_SCHEMA_VERSION}`),
    );
    assert.equal(noise.length, 1);
  });
});
