// The agent and the core speak to a terminal user: "give its URL with --url". In VS Code the same
// fix is a target setting or a command. A failure that comes as data (the agent's error code) gets
// the remedy for its code in these words (REMEDIES); text without a code is still rewritten
// (REWRITES), until every message carries its remedy as data.
// No `vscode` import, so that the unit tests check it in plain Node.
import { Target } from '../../core/config/target';
import { ErrorCode } from '../../remote/agentProtocol';
import { RunSummary } from '../../shared/results';

interface Rewrite {
  pattern: RegExp;
  replace: (target: Target, match: string) => string;
}

const PHASE_COMMANDS: Record<string, string> = { macro: 'Run Macro Phase', micro: 'Run Micro Phase', profile: 'Run Profiler Phase', probe: 'Probe Target' };

// Where a target's fields are changed: the Edit Target command (it saves the target's settings entry).
const edit = (t: Target) => `Inference Bench: Edit Target... on ${t.name}`;

// Longest phrases first: a sentence that names a flag is rewritten whole where we know it, and the
// bare flag is the fallback.
const REWRITES: Rewrite[] = [
  // "Run `infbench micro` on the GPU host": the command palette entry that runs it on this target.
  {
    pattern: /`infbench (macro|micro|profile|probe)\b[^`]*`|\binfbench (macro|micro|profile|probe)\b(?: --[a-z-]+(?: [^\s,;)]+)?)*/g,
    replace: (t, m) => `Inference Bench: ${PHASE_COMMANDS[/infbench (\w+)/.exec(m)![1]]} on ${t.name}`,
  },
  {
    pattern: /give its URL as seen from this host with --url/g,
    replace: (t) => `set the target's server URL (now ${t.serverUrl}) to its URL as seen from ${where(t)}, with ${edit(t)}`,
  },
  {
    pattern: /point --url at the vLLM\/SGLang server behind it/g,
    replace: (t) => `set target ${t.name}'s server URL to the vLLM/SGLang server behind it, with ${edit(t)}`,
  },
  { pattern: /`infbench analyze TRACE\.\.\.` \(or Analyze Trace File\.\.\. in VS Code\)/g, replace: () => 'Inference Bench: Analyze Trace File...' },
  {
    pattern: /for example --python [^\s.]+(?:\.\d+)*\.?/g,
    replace: (t) => `set the target's Python (now ${t.python}) to the interpreter that has PyTorch, with ${edit(t)}.`,
  },
  { pattern: /(?:pass |with |give )?--python(?: PATH)?/g, replace: (t) => `the target's Python (now ${t.python}; change it with ${edit(t)})` },
  { pattern: /(?:pass |with |give )?--url(?: URL)?/g, replace: (t) => `the target's server URL (now ${t.serverUrl}; change it with ${edit(t)})` },
  { pattern: /--request-timeout(?: SECONDS)?/g, replace: () => 'the inferenceBench.requestTimeout setting' },
  { pattern: /--stall-timeout(?: SECONDS)?/g, replace: () => 'the inferenceBench.stallTimeout setting' },
  { pattern: /--allow-busy/g, replace: () => 'answering "Run anyway" when asked' },
  { pattern: /raise --workers/g, replace: () => 'run the level again with fewer requests in flight, or run the CLI with more --workers' },
  { pattern: /--accept-new-host-key/g, replace: () => 'accepting the host key when asked' },
  { pattern: /\(?--trace-dir(?:, sent as output_dir)?\)?/g, replace: () => "(the trace folder: the server's own torch_profiler_dir)" },
];

/** The remedy for each agent error code that has one, as VS Code offers it. */
const REMEDIES: Partial<Record<ErrorCode, (t: Target) => string>> = {
  unauthorized: (t) => `give the key the server was started with: Inference Bench: Set Server API Key... on ${t.name}`,
  server_unreachable: (t) => `set the target's server URL (now ${t.serverUrl}) to its URL as seen from ${where(t)}, with ${edit(t)}`,
  no_torch: (t) => `set the target's Python (now ${t.python}) to the interpreter that has PyTorch, with ${edit(t)}`,
  server_stalled: () => 'raise the inferenceBench.stallTimeout setting if the server is only slow',
  trace_dir_unresolved: () => "set the server's trace folder (its torch_profiler_dir) to an absolute path",
};

/** A run's summary with its reason in the extension's words: from its failure's code where there is one. */
export function runInExtensionWords(run: RunSummary, target: Target): RunSummary {
  const remedy = run.failure && REMEDIES[run.failure.code as ErrorCode];
  if (run.failure && remedy) return { ...run, reason: `${run.failure.message} — ${remedy(target)}` };
  return run.reason ? { ...run, reason: inExtensionWords(run.reason, target) } : run;
}

function where(t: Target): string {
  return t.kind === 'local' ? 'this machine' : (t.host ?? t.name);
}

/** A message of the agent or the core, in the words of the extension for this target. */
export function inExtensionWords(message: string, target: Target): string {
  let out = message;
  for (const r of REWRITES) out = out.replace(r.pattern, (m) => r.replace(target, m));
  return out;
}
