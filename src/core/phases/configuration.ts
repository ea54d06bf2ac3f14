// Every run records the server configuration it measured (src/core/runs/serverConfiguration.ts):
// the one its context names (a configuration of a comparison), else the recipe of the process that
// serves the target's URL as the agent adopts it right before the run.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PhaseContext } from '../campaign/phaseContext';
import { AgentLog, RunFolder } from '../runs/runFolder';
import { configurationId, configurationName, configurationOf, unknownConfiguration } from '../runs/serverConfiguration';
import { serverArgs } from '../../remote/agentOptionArgs';
import { ServerRecipe } from '../../remote/agentProtocol';
import { shellJoin, shellQuote } from '../../remote/shellQuote';
import { RunConfiguration } from '../../shared/results';
import { runAgentCommand } from './agentRun';

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
    const outcome = await runAgentCommand(ctx.transport, ctx.agent, 'server', serverArgs('status', { url }), new AgentLog(dir), {
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
  // The command line as typed on the host (its environment is in the id; its values are not kept).
  const command = `${recipe.cwd ? `cd ${shellQuote(recipe.cwd)} && ` : ''}${shellJoin(recipe.argv)}`;
  return configurationOf(recipe, configurationName(ctx.workspace, ctx.target.name, id), { command });
}
