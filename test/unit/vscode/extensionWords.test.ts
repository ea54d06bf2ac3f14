import * as assert from 'node:assert/strict';
import { Target } from '../../../src/core/config/target';
import { inExtensionWords, runInExtensionWords } from '../../../src/vscode/runs/extensionWords';
import { RunSummary } from '../../../src/shared/results';
import { apiKeyState } from '../../../src/core/probe/tables';
import { ProbeResult } from '../../../src/remote/agentProtocol';

// The messages below are the agent's and the core's own (agent/infbench_agent/profile.py, micro.py,
// auth.py, src/core/explain/budget.ts), as a VS Code user would otherwise read them.
const target: Target = { name: 'b6000', kind: 'ssh', host: 'gpu-box', serverUrl: 'http://127.0.0.1:8000', python: '/opt/venv/bin/python' };

describe("failures in the extension's words", () => {
  it("says the remedy for the agent's error code, whatever words its hint uses", () => {
    const message = 'http://127.0.0.1:8000/v1/models answered HTTP 401: this server wants an API key.';
    const run: RunSummary = {
      id: 'r1',
      phase: 'macro',
      target: 'b6000',
      startedAt: '2026-12-02T10:00:00Z',
      status: 'failed',
      // The CLI's words, and a hint reworded since the rewrites were written: the code decides, not the text.
      reason: `${message} — Hand the server's key over with --api-key KEY, or export it`,
      failure: { code: 'unauthorized', message, hint: "Hand the server's key over with --api-key KEY, or export it" },
    };
    const said = runInExtensionWords(run, target).reason!;
    assert.equal(said, `${message} — give the key the server was started with: Inference Bench: Set Server API Key... on b6000`);
    assert.doesNotMatch(said, /--api-key|export/);
  });

  it('turns "point --url at the server" into the target\'s server URL setting, and the analyze CLI into the command', () => {
    const agent =
      "The profiler phase drives the /start_profile and /stop_profile endpoints of vLLM and SGLang only: if this URL is a proxy, point --url at the vLLM/SGLang server behind it; otherwise capture a torch profiler trace with the server's own tools and break it down with `infbench analyze TRACE...` (or Analyze Trace File... in VS Code).";
    const said = inExtensionWords(agent, target);
    assert.doesNotMatch(said, /--url|infbench analyze/);
    assert.match(said, /set target b6000's server URL to the vLLM\/SGLang server behind it, with Inference Bench: Edit Target\.\.\. on b6000/);
    assert.match(said, /break it down with Inference Bench: Analyze Trace File\.\.\.\.$/);
  });

  it("names the target's URL, host and Python where the CLI names flags", () => {
    assert.equal(
      inExtensionWords('nothing answers — Start the server, or give its URL as seen from this host with --url.', target),
      "nothing answers — Start the server, or set the target's server URL (now http://127.0.0.1:8000) to its URL as seen from gpu-box, with Inference Bench: Edit Target... on b6000.",
    );
    assert.match(
      inExtensionWords('torch is not importable; name the Python that has it, for example --python /opt/venv/bin/python3.', target),
      /set the target's Python \(now \/opt\/venv\/bin\/python\) to the interpreter that has PyTorch/,
    );
  });

  it("the probe's API key line in the shared findings names no front end's way to give a key", () => {
    const server = (auth: NonNullable<ProbeResult['server']['auth']>, error: string | null) => ({ auth, error }) as unknown as ProbeResult['server'];
    // The agent's message carries the CLI's advice; the findings line says only what the probe found.
    const cliWords = 'http://h/v1/models answered HTTP 401: this server wants an API key. To fix it, give the key: infbench --api-key KEY';
    assert.equal(apiKeyState(server({ required: true, key_given: false, status: 401 }, cliWords)), 'this server wants an API key (HTTP 401)');
    assert.equal(
      apiKeyState(server({ required: true, key_given: true, key_accepted: false, status: 403 }, cliWords)),
      'the server refused the key given (HTTP 403)',
    );
    assert.equal(apiKeyState(server({ required: true, key_given: true, key_accepted: true, status: 401 }, null)), 'required, and the key given is accepted');
    assert.equal(apiKeyState(server({ required: false, key_given: false, status: null }, null)), undefined);
  });

  it("names the phase command to run instead of a CLI line, and leaves the server's own flags alone", () => {
    assert.equal(
      inExtensionWords("Run `infbench micro` on the GPU host, with the server's Python, to predict the step's parts.", target),
      "Run Inference Bench: Run Micro Phase on b6000 on the GPU host, with the server's Python, to predict the step's parts.",
    );
    const restart =
      'vLLM answered 404 on /start_profile: restart it with --profiler-config \'{"profiler":"torch"}\' (the key it was started with: --api-key or VLLM_API_KEY).';
    assert.equal(inExtensionWords(restart, target), restart);
  });
});
