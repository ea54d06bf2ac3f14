// The agent and the core name each remedy as data (src/shared/remedy.ts): a flag the CLI takes, a
// command to run. In VS Code the same fix is a target setting, a setting, an answer to a question or
// a command; this file says each in those words, and for some error codes the whole remedy. Nothing
// here reads the words of a message.
// No `vscode` import, so that the unit tests check it in plain Node.
import { Target } from '../../core/config/target';
import { ErrorCode } from '../../remote/agentProtocol';
import { MACRO_WORKLOADS } from '../../remote/agentOptions';
import { RemedyCommand, RemedyFlag, RemedyWords, WorkloadRemedyFlag } from '../../shared/remedy';
import { AGENT_OPTIONS } from '../../remote/agentOptions';

const COMMANDS: Record<RemedyCommand, string> = {
  macro: 'Run Macro Phase',
  micro: 'Run Micro Phase',
  profile: 'Run Profiler Phase',
  probe: 'Probe Target',
  analyze: 'Analyze Trace File...',
};

// Where a target's fields are changed: the Edit Target command (it saves the target's settings entry).
const edit = (t: Target) => `Inference Bench: Edit Target... on ${t.name}`;

// A flag's value is the CLI's example, quoted for a shell ('"ttft:2000 tpot:50"'); VS Code shows it bare.
const bare = (v?: string) => v?.replace(/^(["'])(.*)\1$/, '$2');
const example = (v?: string) => (v ? ` (for example ${bare(v)})` : '');
// The macro phase's workload questions: Run Macro Phase asks them once Custom… is picked.
const CUSTOM = "Run Macro Phase's Custom… workload";
// The agent's workload names (jsonl, trace_replay) as its table titles them.
const datasetTitle = (name: string) => MACRO_WORKLOADS.find((w) => w.name === name)?.title ?? name;

/**
 * Each flag a remedy names, as VS Code sets the same thing; where no setting or question of VS Code's sets
 * it, what VS Code does in its place, so that a hint never sends the user looking for a flag.
 */
const FLAGS: Record<Exclude<RemedyFlag, WorkloadRemedyFlag>, (t: Target, value?: string) => string> = {
  '--url': (t) => `the target's server URL (now ${t.serverUrl}; change it with ${edit(t)})`,
  '--python': (t) => `the target's Python (now ${t.python}; change it with ${edit(t)})`,
  '--api-key': (t) => `the server's key, given with Inference Bench: Set Server API Key... on ${t.name}`,
  // Runs are kept in the open folder: another place is another folder opened.
  '--workspace': () => 'open a folder there with File: Open Folder...',
  '--request-timeout': () => 'the inferenceBench.requestTimeout setting',
  '--stall-timeout': () => 'the inferenceBench.stallTimeout setting',
  '--trials': (_t, v) => `the inferenceBench.macroTrials setting${example(v)}`,
  '--slo': (_t, v) => `the inferenceBench.macroSlo setting${example(v)}`,
  '--goodput': (_t, v) => `the goodput SLOs Run Macro Phase asks for${example(v)}`,
  '--request-rate': (_t, v) => `the request rates Run Macro Phase asks for${example(v)}`,
  '--model': () => "the model's name (Run Micro Phase asks for it; the macro and profiler phases take the first one the server lists)",
  '--config': (t) => `a model's config.json (Run Micro Phase reads the served model's on ${where(t)})`,
  '--hidden': () => "a hidden size (Run Micro Phase takes the model's)",
  '--shape': (_t, v) => `a GEMM shape${v ? ` such as ${v}` : ''} (Run Micro Phase takes the model's)`,
  '--tp': (_t, v) => `the tensor-parallel size Run Micro Phase asks for${example(v)}`,
  '--m': (_t, v) => `token counts ${v ?? 'of your own'} (Run Micro Phase sweeps its default ones)`,
  '--skip': (_t, v) => `leaving ${v ?? 'a part'} out (Run Micro Phase runs every part)`,
  // A CPU run is the one device choice a hint offers, and Run Micro Phase makes it by itself.
  '--device': () => 'Run Micro Phase does so by itself where PyTorch sees no GPU',
  '--allow-busy': () => 'answer "Run anyway" when asked',
  '--ar-world-size': (_t, v) => `an all-reduce world of ${v ?? 'fewer processes'} (Run Micro Phase runs one process per GPU)`,
  '--ar-backend': (_t, v) => `the ${v ?? 'other'} all-reduce backend (Run Micro Phase takes NCCL on GPUs, Gloo on the CPU)`,
  '--trace-dir': () => "the trace folder (the server's own torch_profiler_dir)",
  '--output-len': () => "the output tokens (Run Macro Phase asks for them; Run Profiler Phase's workloads set their own)",
  '--delay-steps': () => "the decode steps before the capture (Run Profiler Phase's workloads set their own)",
  '--start-timeout': () => "the wait for /start_profile (Run Profiler Phase keeps the agent's default)",
  '--stop-timeout': () => "the wait for /stop_profile (Run Profiler Phase keeps the agent's default)",
  // The macro workload's own: Run Macro Phase's Custom… workload asks each, in this order.
  '--concurrency': (_t, v) => `the concurrency levels ${CUSTOM} asks for${example(v)}`,
  '--input-len': () => `the prompt tokens ${CUSTOM} asks for`,
  '--dataset-name': (_t, v) => `the dataset ${CUSTOM} asks for${v ? ` (${datasetTitle(v)})` : ''}`,
  '--dataset-path': (t) => `the file's path on ${where(t)}, which ${CUSTOM} asks for after a dataset that reads one`,
  '--sharegpt-output-len': () => `an output length of your own (${CUSTOM} asks for one after a ShareGPT file)`,
  // Not asked in VS Code: what Run Macro Phase does in their place.
  '--workers': () => "the load-generator processes (Run Macro Phase sizes them to the streams in flight, leaving one of the host's cores to the server)",
  '--header': (_t, v) => `a request header written KEY=VALUE${v ? `, such as ${bare(v)}` : ''} (Run Macro Phase sends none)`,
  '--search': (_t, v) =>
    `a search for the highest ${v === 'rate' ? 'request rate' : 'load'} that meets the inferenceBench.macroSlo setting (Run Macro Phase runs the levels it is given)`,
};

/** A flag as VS Code sets it; a workload's own, as Run Macro Phase asks it from the workload's row in the agent's table. */
function flagWords(flag: RemedyFlag, t: Target, value?: string): string {
  if (flag in FLAGS) return FLAGS[flag as keyof typeof FLAGS](t, value);
  const row = Object.entries(AGENT_OPTIONS.macro).find(([, spec]) => spec.flag === flag || spec.aliases?.includes(flag));
  const owner = row && MACRO_WORKLOADS.find((w) => (w.options as readonly string[]).includes(row[0]));
  const words = flag.slice(2).replace(/-/g, ' ');
  return owner ? `the ${words} ${CUSTOM} asks for after ${owner.title}${example(value)}` : `the ${words}${example(value)}`;
}

/** The whole remedy for each error code that has one of VS Code's own, said in place of the hint. */
const REMEDIES: Partial<Record<ErrorCode | 'python_not_found', (t: Target) => string>> = {
  unauthorized: (t) => `give the key the server was started with: Inference Bench: Set Server API Key... on ${t.name}`,
  server_unreachable: (t) => `set the target's server URL (now ${t.serverUrl}) to its URL as seen from ${where(t)}, with ${edit(t)}`,
  no_torch: (t) => `set the target's Python (now ${t.python}) to the interpreter that has PyTorch, with ${edit(t)}`,
  python_too_old: (t) => `set the target's Python (now ${t.python}) to a newer one on ${where(t)} (the server's venv has one), with ${edit(t)}`,
  python_not_found: (t) => `set the target's Python (now ${t.python}) to the path of a Python 3 on ${where(t)}, with ${edit(t)}`,
  server_stalled: () => 'raise the inferenceBench.stallTimeout setting if the server is only slow',
  trace_dir_unresolved: () => "set the server's trace folder (its torch_profiler_dir) to an absolute path",
  // Run Micro Phase offers presets and the served model: a bad model is the served one's config.json.
  bad_model: (t) =>
    `pick one of the models Run Micro Phase lists; "The model the server runs" needs its config.json on ${where(t)} (in the Hugging Face cache, or at the path the server loaded it from)`,
};

function command(name: RemedyCommand, t: Target, flags: readonly string[] = []): string {
  const palette = `Inference Bench: ${COMMANDS[name]}${name === 'analyze' ? '' : ` on ${t.name}`}`;
  // The one choice a phase asks for that a command remedy names: the profiler.
  return name === 'profile' && flags.includes('nsys') ? `${palette}, choosing Nsight Systems` : palette;
}

function where(t: Target): string {
  return t.kind === 'local' ? 'this machine' : (t.host ?? t.name);
}

/** How VS Code says a remedy for this target: its settings and its commands where the CLI names flags. */
export function extensionWords(target: Target): RemedyWords {
  return {
    remedy: (r) => (r.kind === 'flag' ? flagWords(r.flag, target, r.value) : command(r.command, target, r.flags)),
    forCode: (code) => REMEDIES[code as ErrorCode]?.(target),
  };
}
