import { Logger } from '../core/log';
import { settleDiedRuns } from '../core/findings/runFindings';
import { FindingsFile } from './findingsFile';

/**
 * At the start of a command: every run of the workspace whose process died (SIGKILL, out of
 * memory) is marked so in its run folder and its findings block, and the user is told once.
 */
export function showDiedRuns(workspace: string, log: Logger): void {
  const { marked, blocks } = settleDiedRuns(workspace);
  for (const run of marked) log.warn(`The ${run.phase} run ${run.id} on ${run.target} had died; marked interrupted. ${run.reason ?? ''}`.trim());
  for (const block of blocks) {
    new FindingsFile(block.document, log, { workspace }).findings(block.update);
    block.shown();
  }
}
