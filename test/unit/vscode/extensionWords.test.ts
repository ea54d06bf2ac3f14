import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Target } from '../../../src/core/config/target';
import { extensionWords } from '../../../src/vscode/runs/extensionWords';
import { RunSummary } from '../../../src/shared/results';
import { apiKeyState } from '../../../src/core/probe/tables';
import { ProbeResult } from '../../../src/remote/agentProtocol';
import { CLI_WORDS, Hinted, REMEDY_COMMANDS, REMEDY_FLAGS, sayHinted, WORKLOAD_REMEDY_FLAGS } from '../../../src/shared/remedy';
import { FindingsUpdate } from '../../../src/core/campaign/phaseContext';
import { runMacroPhase } from '../../../src/core/phases/macro';
import { storageProblem } from '../../../src/core/runs/runFolder';
import { Logger, silentLogger } from '../../../src/core/log';
import { replayingAgent } from '../../support/replayAgent';

// The hints below are the agent's own (agent/infbench_agent/profile/command.py, micro/command.py, micro/guard.py,
// macro/server_side.py), with their remedies as the agent sends them; VS Code says each remedy as a
// setting or a command, the CLI as a flag or a command line.
const target: Target = { name: 'b6000', kind: 'ssh', host: 'gpu-box', serverUrl: 'http://127.0.0.1:8000', python: '/opt/venv/bin/python' };
const vscode = extensionWords(target);

describe("every remedy in the extension's words", () => {
  it('has words of its own for every flag the agent may name, with an example value or without, none a CLI flag', () => {
    // The list is generated from the agent's events.py: a flag added there without words here fails this.
    assert.ok(REMEDY_FLAGS.length > 7 && WORKLOAD_REMEDY_FLAGS.length > 3);
    for (const flag of [...REMEDY_FLAGS, ...WORKLOAD_REMEDY_FLAGS]) {
      for (const value of [undefined, '1']) {
        const said = vscode.remedy({ kind: 'flag', flag, value });
        assert.ok(said.length > 10, `${flag}: ${said}`);
        assert.doesNotMatch(said, /--[a-z]|undefined|\{\d\}/, `${flag} said as ${said}`);
        assert.notEqual(said, CLI_WORDS.remedy({ kind: 'flag', flag, value }));
      }
    }
  });

  it("says a workload's own flag from its row in the agent's table, with no words of its own here", () => {
    assert.equal(
      vscode.remedy({ kind: 'flag', flag: '--trace-speed', value: '2' }),
      "the trace speed Run Macro Phase's Custom… workload asks for after replay of a timestamped trace (for example 2)",
    );
  });

  it("says a macro workload's flags as the questions of Run Macro Phase's Custom… workload", () => {
    // As agent/infbench_agent/macro/datasets.py names the workload for one prompt per line.
    assert.equal(
      sayHinted(
        { message: 'not a JSON list', hint: 'for one prompt per line use {0}', remedies: [{ kind: 'flag', flag: '--dataset-name', value: 'jsonl' }] },
        vscode,
      ),
      "not a JSON list — for one prompt per line use the dataset Run Macro Phase's Custom… workload asks for (a JSONL file of prompts)",
    );
    assert.match(
      vscode.remedy({ kind: 'flag', flag: '--dataset-path', value: 'FILE' }),
      /^the file's path on gpu-box, which Run Macro Phase's Custom… workload asks for/,
    );
  });

  it('names a palette command for every command the agent may name, leaving the CLI flags to the questions it asks', () => {
    for (const command of REMEDY_COMMANDS) {
      const said = vscode.remedy({ kind: 'command', command, flags: ['--help'] });
      assert.match(said, /^Inference Bench: /, said);
      assert.doesNotMatch(said, /--|infbench /, said);
    }
    assert.equal(
      vscode.remedy({ kind: 'command', command: 'profile', flags: ['--profiler', 'nsys'] }),
      'Inference Bench: Run Profiler Phase on b6000, choosing Nsight Systems',
    );
  });

  it("says a failed all-reduce's flags as what Run Micro Phase does instead, and the CLI's as flags", () => {
    // As agent/infbench_agent/micro/allreduce.py sends it.
    const failed: Hinted = {
      code: 'allreduce_failed',
      message: 'The all-reduce workers (8 x nccl) failed: rank 3 exited 1',
      hint: "The workers' stderr is in the run's agent.log. Try {0}, {1}, or {2}.",
      remedies: [
        { kind: 'flag', flag: '--ar-world-size', value: '1' },
        { kind: 'flag', flag: '--ar-backend', value: 'gloo' },
        { kind: 'flag', flag: '--skip', value: 'allreduce' },
      ],
    };
    assert.match(sayHinted(failed), /Try --ar-world-size 1, --ar-backend gloo, or --skip allreduce\.$/);
    assert.match(
      sayHinted(failed, vscode),
      /Try an all-reduce world of 1 \(Run Micro Phase runs one process per GPU\), the gloo all-reduce backend .*, or leaving allreduce out \(Run Micro Phase runs every part\)\.$/,
    );
  });
});

describe("failures in the extension's words", () => {
  it("says the remedy for the agent's error code, whatever words its hint uses", () => {
    const message = 'http://127.0.0.1:8000/v1/models answered HTTP 401: this server wants an API key.';
    // A hint reworded since the remedies were written: the code decides, not the text.
    const failure: Hinted = { code: 'unauthorized', message, hint: "Hand the server's key over with --api-key KEY, or export it" };
    const said = sayHinted(failure, vscode);
    assert.equal(said, `${message} — give the key the server was started with: Inference Bench: Set Server API Key... on b6000`);
    assert.doesNotMatch(said, /--api-key|export/);
    assert.equal(sayHinted(failure), `${message} — Hand the server's key over with --api-key KEY, or export it`);
  });

  it('says "point the URL at the server" as the target\'s server URL setting, and the analyze CLI as the command', () => {
    const agent: Hinted = {
      code: 'unknown_server',
      message: 'The server at http://127.0.0.1:8000 is neither vLLM nor SGLang as far as it tells (no /version).',
      hint:
        'The profiler phase drives the /start_profile and /stop_profile endpoints of vLLM and SGLang only: if this URL is a proxy, point {0} at the vLLM/SGLang server behind it; ' +
        "otherwise capture a torch profiler trace with the server's own tools and break it down with {1}.",
      remedies: [
        { kind: 'flag', flag: '--url' },
        { kind: 'command', command: 'analyze' },
      ],
    };
    const said = sayHinted(agent, vscode);
    assert.doesNotMatch(said, /--url|infbench analyze|\{\d\}/);
    assert.match(
      said,
      /point the target's server URL \(now http:\/\/127\.0\.0\.1:8000; change it with Inference Bench: Edit Target\.\.\. on b6000\) at the vLLM\/SGLang server behind it/,
    );
    assert.match(said, /break it down with Inference Bench: Analyze Trace File\.\.\.\.$/);
    const cli = sayHinted(agent);
    assert.match(cli, /point --url at the vLLM\/SGLang server behind it/);
    assert.match(cli, /break it down with `infbench analyze TRACE\.\.\.`\.$/);
  });

  it("names the target's URL, host and Python where the CLI names flags", () => {
    const unreachable: Hinted = {
      code: 'server_unreachable',
      message: 'nothing answers',
      hint: 'Start the server, or give its URL as seen from this host with {0}.',
      remedies: [{ kind: 'flag', flag: '--url' }],
    };
    assert.equal(
      sayHinted(unreachable, vscode),
      "nothing answers — set the target's server URL (now http://127.0.0.1:8000) to its URL as seen from gpu-box, with Inference Bench: Edit Target... on b6000",
    );
    assert.equal(sayHinted(unreachable), 'nothing answers — Start the server, or give its URL as seen from this host with --url.');
    const noTorch: Hinted = {
      code: 'no_torch',
      message: 'PyTorch is not importable by python3.',
      hint: "Point the target's python at the server's interpreter (the one with torch and vLLM), for example {0}.",
      remedies: [{ kind: 'flag', flag: '--python', value: '/opt/venv/bin/python3' }],
    };
    assert.match(sayHinted(noTorch, vscode), /set the target's Python \(now \/opt\/venv\/bin\/python\) to the interpreter that has PyTorch/);
    assert.match(sayHinted(noTorch), /for example --python \/opt\/venv\/bin\/python3\.$/);
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

  it("names the phase command to run and the question it asks instead of CLI flags, and leaves the server's own flags alone", () => {
    const busy: Hinted = {
      code: 'gpus_busy',
      message: 'The GPUs are busy.',
      hint: 'Stop the server and run again, or let Inference Bench stop it and start it again afterwards ({0}; it asks first); or consent to run anyway: {1} (the run then sizes itself).',
      remedies: [
        { kind: 'command', command: 'micro', flags: ['--stop-server'] },
        { kind: 'flag', flag: '--allow-busy' },
      ],
    };
    assert.equal(
      sayHinted(busy, vscode),
      'The GPUs are busy. — Stop the server and run again, or let Inference Bench stop it and start it again afterwards (Inference Bench: Run Micro Phase on b6000; it asks first); or consent to run anyway: answer "Run anyway" when asked (the run then sizes itself).',
    );
    assert.match(sayHinted(busy), /\(`infbench micro --stop-server`; it asks first\); or consent to run anyway: --allow-busy \(/);
    // A hint with no remedies names the server's flags, which are the same everywhere.
    const restart: Hinted = {
      code: 'profiler_disabled',
      message: 'vLLM answered 404 on /start_profile',
      hint: 'restart it with --profiler-config \'{"profiler":"torch"}\' (the key it was started with: --api-key or VLLM_API_KEY).',
    };
    assert.equal(sayHinted(restart, vscode), sayHinted(restart));
  });
});

// The agent's events for macro runs that failed, as agent/infbench_agent/macro/server_side.py and macro/command.py
// send them; replayed, since the point is the words the run is said in.
const notOpenAi = [
  {
    type: 'error',
    code: 'server_error',
    message: 'http://127.0.0.1:8000/v1/models answered HTTP 404',
    hint: 'Is this an OpenAI-compatible server (vLLM, SGLang)? Check {0}, or name the model with {1}',
    remedies: [
      { kind: 'flag', flag: '--url' },
      { kind: 'flag', flag: '--model' },
    ],
  },
  { type: 'done', ok: false },
];
const stalledLevel = { max_concurrency: 1, request_rate: null, completed: 0, failed: 2, duration: 60, num_prompts: 2, failures: { stalled: 2 } };
const stalled = [
  { type: 'macro.level', level: 0, partial: false, summary: stalledLevel },
  { type: 'result', result: { levels: [stalledLevel], server: { model: 'm' }, cancelled: false, stalled: true } },
  {
    type: 'error',
    code: 'server_stalled',
    message: 'The server accepted the requests but answered none in time: every request of c=1 stalled; the levels before are kept',
    hint: 'Check the server on the host (its log; curl http://127.0.0.1:8000/v1/models); if it is only slow under this load, raise {0} and {1} (seconds)',
    remedies: [
      { kind: 'flag', flag: '--stall-timeout' },
      { kind: 'flag', flag: '--request-timeout' },
    ],
  },
  { type: 'done', ok: false },
];

async function failedMacro(events: object[], words?: typeof vscode, log: Logger = silentLogger): Promise<{ run: RunSummary; findings?: FindingsUpdate }> {
  let run: RunSummary | undefined;
  let findings: FindingsUpdate | undefined;
  await runMacroPhase(
    {
      target,
      transport: replayingAgent(events, 2),
      agent: { python: 'python3', path: 'agent.pyz', hash: 'x' },
      workspace: mkdtempSync(join(tmpdir(), 'ib-words-')),
      sink: { runChanged: (r) => (run = r), findings: (u) => (findings = u) },
      log,
      words,
    },
    { concurrency: [1] },
  );
  return { run: run!, findings };
}

describe("a run folder that cannot be written, in each front end's words", () => {
  it('says where else the runs can go as a folder to open, where the CLI names --workspace', () => {
    const full = storageProblem(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }), '/ws/.inference-bench/runs/r1/events.jsonl');
    assert.match(
      full.message,
      /^Disk full at .*events\.jsonl: .* Free some space there, or keep the runs on another disk \(--workspace DIR\), and run again\.$/,
    );
    assert.match(full.said(vscode), /keep the runs on another disk \(open a folder there with File: Open Folder\.\.\.\), and run again\.$/);
    assert.doesNotMatch(full.said(vscode), /--workspace/);
  });
});

describe("a failed run's reason in each front end's words", () => {
  it("VS Code's reason names the target's setting where the CLI's names the flag", async () => {
    const inVscode = await failedMacro(notOpenAi, vscode);
    assert.equal(inVscode.run.status, 'failed');
    assert.equal(
      inVscode.run.reason,
      "http://127.0.0.1:8000/v1/models answered HTTP 404 — Is this an OpenAI-compatible server (vLLM, SGLang)? Check the target's server URL (now http://127.0.0.1:8000; change it with Inference Bench: Edit Target... on b6000), or name the model with the model's name (Run Micro Phase asks for it; the macro and profiler phases take the first one the server lists)",
    );
    assert.deepEqual(inVscode.run.failure?.remedies, [
      { kind: 'flag', flag: '--url' },
      { kind: 'flag', flag: '--model' },
    ]);
    const inCli = await failedMacro(notOpenAi);
    assert.equal(
      inCli.run.reason,
      'http://127.0.0.1:8000/v1/models answered HTTP 404 — Is this an OpenAI-compatible server (vLLM, SGLang)? Check --url, or name the model with --model',
    );
  });

  it("the findings document's line for a stalled run says VS Code's setting, or the CLI's flags", async () => {
    const failedLine = (f?: FindingsUpdate) => f?.lines.find((l) => l.startsWith('Run failed:')) ?? '';
    const inVscode = failedLine((await failedMacro(stalled, vscode)).findings);
    assert.match(
      inVscode,
      /every request of c=1 stalled; the levels before are kept — raise the inferenceBench\.stallTimeout setting if the server is only slow$/,
    );
    assert.doesNotMatch(inVscode, /--stall-timeout|--request-timeout/);
    const inCli = failedLine((await failedMacro(stalled)).findings);
    assert.match(inCli, /raise --stall-timeout and --request-timeout \(seconds\)$/);
  });
});

describe("an agent's warning with its next step, in each front end's words", () => {
  // As agent/infbench_agent/macro/command.py warns of a load generator that may limit the numbers.
  const busyClient = [
    {
      type: 'log',
      level: 'warn',
      message: 'c=64: the load generator used 97% of a core per process: it may be limiting the numbers',
      hint: 'raise {0}',
      remedies: [{ kind: 'flag', flag: '--workers' }],
    },
    ...notOpenAi,
  ];
  const warned = async (words?: typeof vscode) => {
    const warnings: string[] = [];
    await failedMacro(busyClient, words, { ...silentLogger, warn: (m) => warnings.push(m) });
    return warnings;
  };

  it('says what Run Macro Phase does in VS Code, and the flag on the CLI', async () => {
    assert.deepEqual(await warned(), ['macro: c=64: the load generator used 97% of a core per process: it may be limiting the numbers — raise --workers']);
    const [inVscode] = await warned(vscode);
    assert.match(inVscode, /it may be limiting the numbers — raise the load-generator processes \(Run Macro Phase sizes them to the streams in flight/);
    assert.doesNotMatch(inVscode, /--workers|\{0\}/);
  });
});
