import { createInterface } from 'node:readline/promises';
import { CliCommand, parseCommandArgs, UsageError } from '../command';
import { agentValueAs, FlagValues } from '../flags';
import { openCliTarget, OpenedTarget, TARGET_OPTIONS, targetUsage } from '../targetOptions';
import { readFileSync } from 'node:fs';
import { environmentInWords, outputTarget, parseUserRecipe, startCommand, UserServerRecipe } from '../../core/server/recipe';
import { Consent, pendingServerChanges, ServerChange, ServerControlError, ServerProgress, ServerStep } from '../../core/server/serverChange';
import { serverProgressText } from '../../core/server/progressText';

const USAGE = `infbench server — the inference server's recipe, and stopping, restarting and restoring it

Usage: infbench server status|stop|restart|restore [options]

  status     adopt the running server's recipe from its process (command line, folder, environment,
             user, pid and start time, and whether systemd or a container runs it) and show it
  stop       stop it (only that pid, after checking its start time and command line; SIGTERM, SIGKILL
             after 60 s); \`restore\` starts it again
  restart    stop it and start it again, with --with-profiler: with the torch profiler on, as its
             version takes it (vLLM >= 0.13 --profiler-config, older VLLM_TORCH_PROFILER_DIR);
             \`restore\` puts the original back
  restore    put back the original of the last change not yet put back (after a lost connection too)

Nothing is stopped or started without a yes: the exact commands are shown and asked about on the
terminal (y/N), or --yes agrees in advance. Each change keeps the original recipe, and every step,
under .inference-bench/server/ in the workspace.

${targetUsage()}
Options:
  --yes                     agree to the stop or start shown (needed where there is no terminal)
  --with-profiler DIR|auto  restart: the profiler writes traces to DIR on the host (auto: a new folder
                            in the agent's cache there)
  --profiler-delay-iterations N   restart, vLLM: engine steps skipped after /start_profile
  --profiler-max-iterations N     restart, vLLM: engine steps recorded at most (a bounded capture)
  --recipe FILE             start this recipe (JSON: {"argv": [...], "cwd": "...", "env": {...}}) in
                            place of the adopted one when starting or restoring; env is laid over
                            the adopted environment (the target setting "serverRecipe" in VS Code)

Example: infbench server restart --target gpubox --with-profiler auto --profiler-max-iterations 64`;

/** A restart's bounds of the profiler's capture (profile's --restart-with-profiler too), under the CLI's own names. */
export const PROFILER_ITERATION_OPTIONS = {
  'profiler-delay-iterations': { type: 'string' },
  'profiler-max-iterations': { type: 'string' },
} as const;

/** What the command parses: the target's flags and its own. */
const OPTIONS = {
  ...TARGET_OPTIONS,
  yes: { type: 'boolean' },
  'with-profiler': { type: 'string' },
  ...PROFILER_ITERATION_OPTIONS,
  recipe: { type: 'string' },
} as const;

/** PROFILER_ITERATION_OPTIONS' values, checked as the agent's `server --profile-delay-iterations` and `--profile-max-iterations` rows say. */
export function profilerIterations(v: FlagValues): { delayIterations?: number; maxIterations?: number } {
  return {
    delayIterations: agentValueAs('server', 'profileDelayIterations', 'profiler-delay-iterations', v),
    maxIterations: agentValueAs('server', 'profileMaxIterations', 'profiler-max-iterations', v),
  };
}

/** Says a consent step on stderr and asks y/N on the terminal; --yes answers yes, no terminal answers no. */
export function cliConsent(yes: boolean | undefined): Consent {
  return async (step: ServerStep) => {
    const lines = [`${step.title}:`, ...step.commands.map((c) => `  $ ${c}`)];
    for (const c of step.changes) lines.push(`  - ${c}`);
    if (step.estimateS) lines.push(`  The last start of this recipe took ${Math.round(step.estimateS)} s.`);
    process.stderr.write(`${lines.join('\n')}\n`);
    if (yes) {
      process.stderr.write('--yes given: going ahead.\n');
      return true;
    }
    if (!process.stdin.isTTY) {
      process.stderr.write('Not done: there is no terminal to ask on. Pass --yes to agree to the commands above.\n');
      return false;
    }
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return /^y(es)?$/i.test((await rl.question('Go ahead? [y/N] ')).trim());
    } finally {
      rl.close();
    }
  };
}

/** The server's start-up on stderr: its log lines as they come, and where it stands. */
export function cliServerProgress(p: ServerProgress): void {
  if (p.line !== undefined) {
    process.stderr.write(`  | ${p.line}\n`);
    return;
  }
  // The stages read from the log were just shown as its lines.
  if (p.stage === 'weights' || p.stage === 'cuda_graphs' || p.stage === 'api') return;
  process.stderr.write(`server: ${serverProgressText(p)}\n`);
}

/** Said before a phase on a target whose server a previous session changed and did not put back. */
export function warnPendingServerChange(opened: OpenedTarget): void {
  const pending = pendingServerChanges(opened.workspace, opened.target.name)[0];
  if (!pending) return;
  process.stderr.write(
    `The server on ${opened.target.name} was changed for ${pending.record.purpose} and not put back (${pending.record.state}, record ${pending.dir}). ` +
      `Put the original back with: infbench server restore --target ${opened.target.name}\n`,
  );
}

export const serverCommand: CliCommand = {
  name: 'server',
  summary: "the server's recipe; stop, restart (with the profiler) and restore it, with consent",
  usage: USAGE,
  options: OPTIONS,
  async run(argv: string[]): Promise<number> {
    const parsed = parseCommandArgs('server', {
      args: argv,
      allowPositionals: true,
      options: OPTIONS,
      strict: true,
    });
    const v = parsed.values;
    const action = parsed.positionals[0];
    if (!['status', 'stop', 'restart', 'restore'].includes(action ?? '')) throw new UsageError('Say what to do: infbench server status|stop|restart|restore.');
    const profilerDir = agentValueAs('server', 'profilerDir', 'with-profiler', v);
    if (profilerDir !== undefined && action !== 'restart') throw new UsageError('--with-profiler goes with restart.');
    const iterations = profilerIterations(v);
    const userRecipe = v.recipe ? readRecipeFile(v.recipe) : undefined;
    const opened = await openCliTarget(v, 'macro', 'Stopping…');
    if (userRecipe) opened.target.serverRecipe = userRecipe;
    const consent = cliConsent(v.yes);
    try {
      if (action === 'restore') return await restore(opened, consent);
      const { change, status } = await ServerChange.adopt(opened, action === 'status' ? 'a look' : `infbench server ${action}`, {
        profilerDir,
        ...iterations,
        signal: opened.signal,
      });
      const recipe = change.record.original;
      if (action === 'status') {
        const id = recipe.identity;
        process.stdout.write(
          [
            `Server at ${recipe.url}: ${recipe.kind}${recipe.version ? ` ${recipe.version}` : ''}, pid ${id?.pid ?? '?'} (start time ${id?.start_ticks ?? '?'}), user ${recipe.user ?? '?'}`,
            `Run by: ${recipe.manager.kind}${recipe.manager.unit ? ` ${recipe.manager.unit}` : ''}${recipe.manager.container ? ` ${recipe.manager.container}` : ''}`,
            `Recipe: ${startCommand(recipe, status.shell_env)}`,
            `Output: ${outputTarget(recipe)}`,
            `Environment: ${environmentInWords(recipe, status.shell_env).replace(/^environment: /, '')}`,
            `Last start of this recipe: ${status.estimate_s ? `${Math.round(status.estimate_s)} s` : 'not seen yet'}`,
            `Kept in: ${change.dir}`,
            '',
          ].join('\n'),
        );
        warnPendingServerChange(opened);
        return 0;
      }
      if (action === 'stop') {
        const step = change.stopStep();
        if (
          !(await consent({
            ...step,
            title: `Stop the server on ${opened.target.name} (pid ${recipe.identity?.pid ?? '?'})`,
            commands: step.commands.slice(0, 1),
          }))
        )
          return 1;
        await change.stop(cliServerProgress);
        process.stdout.write(`Stopped. Start it again with: infbench server restore --target ${opened.target.name}\n`);
        return 0;
      }
      const changed = profilerDir ? status.profiler_recipe : recipe;
      if (!changed) throw new ServerControlError('No recipe with the profiler could be made for this server.');
      if (!(await consent(change.restartStep(changed, status.estimate_s)))) return 1;
      await change.stop(cliServerProgress);
      try {
        await change.start(changed, { signal: opened.signal, onProgress: cliServerProgress });
      } catch (err) {
        process.stderr.write(`${err instanceof Error ? err.message : String(err)}\nPutting the original back…\n`);
        await change.restore(cliServerProgress);
        return 1;
      }
      process.stdout.write(
        profilerDir ? `Running with the profiler. Put the original back with: infbench server restore --target ${opened.target.name}\n` : 'Restarted.\n',
      );
      return 0;
    } catch (err) {
      if (err instanceof ServerControlError) {
        process.stderr.write(`infbench server ${action}: ${err.message}\n`);
        return 1;
      }
      throw err;
    } finally {
      await opened.close();
    }
  },
};

async function restore(opened: OpenedTarget, consent: Consent): Promise<number> {
  const pending = pendingServerChanges(opened.workspace, opened.target.name)[0];
  if (!pending) {
    process.stdout.write(`Nothing to put back: no change of the server on ${opened.target.name} is pending.\n`);
    return 0;
  }
  const change = ServerChange.open(opened, pending.dir);
  if (!(await consent(change.restoreStep()))) return 1;
  await change.restore(cliServerProgress);
  process.stdout.write('The original server is back.\n');
  return 0;
}

function readRecipeFile(path: string): UserServerRecipe {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`--recipe ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return parseUserRecipe(JSON.parse(text));
  } catch (err) {
    throw new UsageError(`--recipe ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
