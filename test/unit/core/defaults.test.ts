import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_FINDINGS_DOCUMENT } from '../../../src/core/findings/skeleton';
import { AGENT_VERSION } from '../../../src/remote/agentProtocol';

// package.json must spell its defaults out (VS Code reads them from there): they are checked against the one home in the code.
const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
  version: string;
  contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
};

describe('defaults spelled in package.json', () => {
  it('names the same default findings document as the code', () => {
    assert.equal(manifest.contributes.configuration.properties['inferenceBench.findingsDocument'].default, DEFAULT_FINDINGS_DOCUMENT);
  });

  it('is the version the agent and the CLI say', () => {
    assert.equal(manifest.version, AGENT_VERSION);
  });
});
