// The agent and the core name each remedy as data (src/shared/remedy.ts): a flag the CLI takes, a
// command to run. In VS Code the same fix is a target setting, a setting, an answer to a question or
// a command; this file says each in those words, and for some error codes the whole remedy. Nothing
// here reads the words of a message.
// No `vscode` import, so that the unit tests check it in plain Node.
import { Target } from '../../core/config/target';
import { ErrorCode } from '../../remote/agentProtocol';
import { RemedyCommand, RemedyFlag, RemedyWords } from '../../shared/remedy';

const COMMANDS: Record<RemedyCommand, string> = {
  macro: 'Run Macro Phase',
  micro: 'Run Micro Phase',
  profile: 'Run Profiler Phase',
  probe: 'Probe Target',
  analyze: 'Analyze Trace File...',
};

// Where a target's fields are changed: the Edit Target command (it saves the target's settings entry).
const edit = (t: Target) => `Inference Bench: Edit Target... on ${t.name}`;

/** Each flag a remedy names, as VS Code sets the same thing. */
const FLAGS: Record<RemedyFlag, (t: Target) => string> = {
  '--url': (t) => `the target's server URL (now ${t.serverUrl}; change it with ${edit(t)})`,
  '--python': (t) => `the target's Python (now ${t.python}; change it with ${edit(t)})`,
  '--request-timeout': () => 'the inferenceBench.requestTimeout setting',
  '--stall-timeout': () => 'the inferenceBench.stallTimeout setting',
  '--allow-busy': () => 'answer "Run anyway" when asked',
  '--trace-dir': () => "the trace folder (the server's own torch_profiler_dir)",
  // Runs are kept in the open folder: another place is another folder opened.
  '--workspace': () => 'open a folder there with File: Open Folder...',
};

/** The whole remedy for each error code that has one of VS Code's own, said in place of the hint. */
const REMEDIES: Partial<Record<ErrorCode | 'python_not_found', (t: Target) => string>> = {
  unauthorized: (t) => `give the key the server was started with: Inference Bench: Set Server API Key... on ${t.name}`,
  server_unreachable: (t) => `set the target's server URL (now ${t.serverUrl}) to its URL as seen from ${where(t)}, with ${edit(t)}`,
  no_torch: (t) => `set the target's Python (now ${t.python}) to the interpreter that has PyTorch, with ${edit(t)}`,
  python_too_old: (t) => `set the target's Python (now ${t.python}) to a newer one on ${where(t)} (the server's venv has one), with ${edit(t)}`,
  python_not_found: (t) => `set the target's Python (now ${t.python}) to the path of a Python 3 on ${where(t)}, with ${edit(t)}`,
  server_stalled: () => 'raise the inferenceBench.stallTimeout setting if the server is only slow',
  trace_dir_unresolved: () => "set the server's trace folder (its torch_profiler_dir) to an absolute path",
};

function where(t: Target): string {
  return t.kind === 'local' ? 'this machine' : (t.host ?? t.name);
}

/** How VS Code says a remedy for this target: its settings and its commands where the CLI names flags. */
export function extensionWords(target: Target): RemedyWords {
  return {
    remedy: (r) =>
      r.kind === 'flag' ? FLAGS[r.flag](target) : `Inference Bench: ${COMMANDS[r.command]}${r.command === 'analyze' ? '' : ` on ${target.name}`}`,
    forCode: (code) => REMEDIES[code as ErrorCode]?.(target),
  };
}
