// Every run records the server configuration it measured (src/core/runs/serverConfiguration.ts):
// the one its context names (a configuration of a comparison), else the recipe of the process that
// serves the target's URL as the agent adopts it right before the run.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PhaseContext } from '../campaign/phaseContext';
import { AgentLog, RunFolder } from '../runs/runFolder';
import { configurationId, configurationOf, isKnown, unknownConfiguration } from '../runs/serverConfiguration';
import { serverChangesRoot } from '../server/serverChange';
import { startCommand } from '../server/recipe';
import { ServerRecipe } from '../../remote/agentProtocol';
import { RunConfiguration } from '../../shared/results';
import { runAgentCommand } from './agentRun';

/** The name of the server as its user runs it: the recipe adopted before any change the tool made. */
export const PRODUCTION = 'production';

/**
 * Records in `run` (meta.json) the configuration it measures and returns it: the context's, or the
 * adopted recipe of what serves `url` now; "unknown", with why, when none can be adopted.
 */
export async function recordConfiguration(ctx: PhaseContext, run: RunFolder, url: string, apiKey = ctx.apiKey): Promise<RunConfiguration> {
  const configuration = ctx.configuration ?? (await adoptConfiguration(ctx, run, url, apiKey));
  run.update({ configuration });
  return configuration;
}

async function adoptConfiguration(ctx: PhaseContext, run: RunFolder, url: string, apiKey: string | undefined): Promise<RunConfiguration> {
  if (ctx.signal?.aborted) return unknownConfiguration('the run was stopped before the server was looked at');
  const dir = join(run.dir, 'server-status');
  let recipe: ServerRecipe | null | undefined;
  let running = false;
  try {
    mkdirSync(dir, { recursive: true });
    const outcome = await runAgentCommand(ctx.transport, ctx.agent, 'server', ['status', '--url', url], new AgentLog(dir), {
      signal: ctx.signal,
      apiKey,
      words: ctx.words,
    });
    if (outcome.status !== 'completed' || !outcome.result)
      return unknownConfiguration(`the agent's \`server status\` on ${ctx.transport.label} did not answer (${outcome.reason ?? outcome.status})`);
    recipe = outcome.result.recipe;
    running = outcome.result.running === true;
  } catch (err) {
    return unknownConfiguration(`the server's recipe could not be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!recipe)
    return unknownConfiguration(
      running
        ? `the process serving ${url} is not visible from where the agent runs on ${ctx.transport.label} (another container or user)`
        : `no server process was found behind ${url} on ${ctx.transport.label}`,
    );
  const id = configurationId(recipe);
  return configurationOf(recipe, configurationName(ctx.workspace, ctx.target.name, id), { command: startCommand(recipe) });
}

/**
 * The short name of configuration `id` of `target`: "production" for the recipe a server change
 * adopted before changing anything (the server as its user runs it), else the name an earlier run of
 * the same configuration carries (a comparison's flag-set name), "production" for the first
 * configuration measured on a target, and otherwise one made from the id.
 */
export function configurationName(workspace: string, target: string, id: string): string {
  for (const recipe of adoptedOriginals(workspace, target)) if (configurationId(recipe) === id) return PRODUCTION;
  let anyKnown = false;
  for (const run of RunFolder.list(workspace)) {
    const c = run.info.configuration;
    if (run.info.target !== target || !c || !isKnown(c)) continue;
    if (c.id === id) return c.name;
    anyKnown = true;
  }
  return anyKnown || adoptedOriginals(workspace, target).length ? `config-${id.slice(0, 6)}` : PRODUCTION;
}

/** The recipes server changes of `target` adopted before they changed anything (and the process that ran, where a user recipe replaced it). */
function adoptedOriginals(workspace: string, target: string): ServerRecipe[] {
  const root = serverChangesRoot(workspace);
  if (!existsSync(root)) return [];
  const out: ServerRecipe[] = [];
  for (const name of readdirSync(root)) {
    try {
      const record = JSON.parse(readFileSync(join(root, name, 'change.json'), 'utf8')) as { target?: string; original?: ServerRecipe };
      if (record.target === target && record.original?.argv && record.original.env) out.push(record.original);
    } catch {
      // not a change folder, or one being written
    }
  }
  return out;
}
