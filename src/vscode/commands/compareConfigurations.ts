import * as vscode from 'vscode';
import { parseConfiguration, ServerConfiguration } from '../../core/server/configurations';
import { ConfigurationsCompared, runConfigurationsCompared } from '../../core/server/configurationsCompared';
import { MacroOptions } from '../../core/macro/options';
import { PhaseRunners } from '../runs/phaseRunner';
import { RunController } from '../runs/runController';
import { ServerStep } from '../../core/server/serverChange';
import { confirmServerStep, serverOutputChannel, serverProgressToChannel } from '../server/serverPrompts';
import { pickTarget } from './pickers';

/** What a caller (a test, a keybinding) can give instead of the questions: the configurations and the workload. */
export interface CompareConfigurationsGiven {
  configs?: string[];
  macro?: Record<string, unknown>;
  /** The restarts agreed to in advance, as infbench configs --yes (the commands still go to the server's output channel). */
  yes?: boolean;
}

// The last configurations asked for, offered again (the flag sets of a campaign seldom change between tries).
const LAST_KEY = 'inferenceBench.lastConfigurations';

/**
 * Compare Server Configurations…: flag sets asked one per line (`NAME: FLAGS`, the first the
 * baseline), the macro workload as Run Macro Phase asks it, then one modal with every command; each
 * configuration is started and measured, and the original put back. Each is a macro run of its own in
 * the results view; the findings document gets one table across them.
 */
export async function compareConfigurationsCommand(
  controller: RunController,
  phases: PhaseRunners,
  state: vscode.Memento,
  arg: unknown,
  given?: CompareConfigurationsGiven,
): Promise<ConfigurationsCompared | undefined> {
  const target = await pickTarget(arg, 'Compare Server Configurations');
  if (!target) return undefined;
  const configs = given?.configs ? given.configs.map(parseConfiguration) : await askConfigurations(target.name, state.get<string[]>(LAST_KEY) ?? []);
  if (!configs) return undefined;
  const macro = given?.macro ?? (await phases.macro.pickOptions(target, false));
  if (!macro) return undefined;
  await state.update(
    LAST_KEY,
    configs.map((c) =>
      `${c.name}: ${c.edits.map((e) => (e.kind === 'remove' ? `!${e.flag}` : e.kind === 'set' ? `${e.flag} ${e.value}` : e.flag)).join(' ')}`.trim(),
    ),
  );
  await vscode.commands.executeCommand('inferenceBench.showResults');
  let compared: ConfigurationsCompared | undefined;
  await controller.runPhase(
    {
      ...phases.macro,
      title: `Server configurations compared (${configs.map((c) => c.name).join(', ')})`,
      async run(ctx) {
        compared = await runConfigurationsCompared(ctx, configs, macro as MacroOptions, {
          consent: given?.yes ? agreedInAdvance : confirmServerStep,
          onProgress: serverProgressToChannel(target.name),
          signal: ctx.signal,
        });
        return compared;
      },
    },
    target,
    {},
  );
  if (compared) {
    const missed = compared.configurations.filter((c) => c.status !== 'completed');
    const say = missed.length ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void say(
      `Inference Bench: ${compared.configurations.length - missed.length} of ${compared.configurations.length} configurations measured on ${target.name}${missed.length ? ` (not: ${missed.map((c) => `${c.name}: ${c.error ?? c.status}`).join('; ')})` : ''}; the original server is back. The table is in the findings document.`,
    );
  }
  return compared;
}

async function agreedInAdvance(step: ServerStep): Promise<boolean> {
  serverOutputChannel().info(`Agreed in advance: ${step.title}\n${step.commands.map((c) => `$ ${c}`).join('\n')}`);
  return true;
}

/** The configurations, one input box each, until an empty one after the second; the last ones offered again. */
async function askConfigurations(targetName: string, last: string[]): Promise<ServerConfiguration[] | undefined> {
  const configs: ServerConfiguration[] = [];
  for (let i = 0; ; i++) {
    const text = await vscode.window.showInputBox({
      title: `Compare Server Configurations on ${targetName}: configuration ${i + 1}`,
      prompt:
        i === 0
          ? 'The baseline as NAME: FLAGS. FLAGS set (--flag value), add (--switch) or remove (!--flag) flags of the command line the server runs; empty FLAGS is the server as it runs.'
          : i === 1
            ? 'Another configuration, NAME: FLAGS (for example tp4pp2: --tensor-parallel-size 4 --pipeline-parallel-size 2)'
            : 'Another configuration, NAME: FLAGS; leave empty to start the comparison',
      value: last[i] ?? (i === 0 ? 'as-running:' : ''),
      ignoreFocusOut: true,
      validateInput: (v) => {
        if (!v.trim()) return i < 2 ? 'At least two configurations are compared.' : undefined;
        try {
          const c = parseConfiguration(v);
          return configs.some((o) => o.name === c.name)
            ? `"${c.name}" is taken by configuration ${configs.findIndex((o) => o.name === c.name) + 1}.`
            : undefined;
        } catch (err) {
          return err instanceof Error ? err.message : String(err);
        }
      },
    });
    if (text === undefined) return undefined;
    if (!text.trim()) return configs;
    configs.push(parseConfiguration(text));
  }
}
