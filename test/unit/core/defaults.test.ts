import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { campaignStem } from '../../../src/core/findings/campaignName';
import { DEFAULT_FINDINGS_DOCUMENT } from '../../../src/core/findings/skeleton';
import { AGENT_VERSION } from '../../../src/remote/agentProtocol';

// package.json must spell its defaults out (VS Code reads them from there): they are checked against the one home in the code.
const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
  version: string;
  contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
};

describe('defaults spelled in package.json', () => {
  it("leaves the findings document unnamed, to be named after the campaign as the demo's is", () => {
    // Empty: the extension names the document after the first probe's model and GPU (campaignName.ts).
    assert.equal(manifest.contributes.configuration.properties['inferenceBench.findingsDocument'].default, '');
    // The demo's default is the name that rule gives its simulated Kimi-K2.5 on an RTX PRO 6000 Blackwell.
    assert.equal(`${campaignStem('moonshotai/Kimi-K2.5-INT4', 'NVIDIA RTX PRO 6000 Blackwell Server Edition')}bench1.md`, DEFAULT_FINDINGS_DOCUMENT);
  });

  it('is the version the agent and the CLI say', () => {
    assert.equal(manifest.version, AGENT_VERSION);
  });
});
