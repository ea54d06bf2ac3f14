import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { FindingsUpdate, ResultSink } from '../core/campaign/phaseContext';
import { applyUpdateOnDisk, createSkeletonIfAbsent, FindingsDiskError } from '../core/findings/diskDocument';
import { findingsFileProblem, inside } from '../core/findings/location';
import { campaignUpdate, ProbeInfo } from '../core/findings/skeleton';
import { Logger, silentLogger } from '../core/log';
import { storageProblem } from '../core/runs/runFolder';
import { UsageError } from './command';

/** The --findings file inside the workspace; a path outside it (also through a symlink) or not a regular file is refused (nothing is written there). */
export function findingsFlagPath(workspace: string, given: string): string {
  const file = resolve(workspace, given);
  if (!inside(resolve(workspace), file)) {
    throw refusal(given, `is outside the workspace ${workspace}`);
  }
  const problem = findingsFileProblem(workspace, file);
  if (problem) throw refusal(given, `is refused: ${problem}`);
  return file;
}

function refusal(given: string, why: string): UsageError {
  return new UsageError(
    `--findings ${given} ${why}; Inference Bench writes only regular files inside the workspace as findings documents, so nothing was written there. ` +
      'Give a path inside the workspace (for example --findings bench.md), or pass --workspace with the folder that holds the document.',
  );
}

export interface FindingsFileOptions {
  now?: () => Date;
  /** The workspace the document must stay inside; its real path (symlinks resolved) is checked before every write. */
  workspace?: string;
}

/**
 * The CLI's findings document: the same file the extension keeps open, edited on disk. Each update
 * re-reads the file (the user may have edited it in an editor since), changes only the tool's own
 * regions, and replaces the file only where it still holds what was read (see diskDocument.ts).
 */
export class FindingsFile implements Pick<ResultSink, 'findings'> {
  private readonly written = new Set<string>();
  /** The file's text as this process last saw it, so that a file suddenly empty is not taken as the user's. */
  private lastText?: string;

  constructor(
    readonly path: string,
    private readonly log: Logger = silentLogger,
    private readonly options: FindingsFileOptions = {},
  ) {}

  /** Creates the skeleton if the document does not exist yet; fills the header in from the probe. */
  ensure(probe?: ProbeInfo): void {
    try {
      if (createSkeletonIfAbsent(this.path, probe, this.options.workspace)) {
        this.log.info(`Created the findings document ${this.path}`);
        return;
      }
    } catch (err) {
      throw this.explain('create', err);
    }
    if (probe) this.findings(campaignUpdate(probe));
  }

  findings(update: FindingsUpdate): void {
    try {
      if (!existsSync(this.path) && createSkeletonIfAbsent(this.path, undefined, this.options.workspace))
        this.log.info(`Created the findings document ${this.path}`);
      const result = applyUpdateOnDisk(this.path, update, {
        now: this.options.now?.() ?? new Date(),
        previouslyWritten: this.written.has(update.sectionId),
        previousText: this.lastText,
        workspace: this.options.workspace,
      });
      this.written.add(update.sectionId);
      this.lastText = result.diskText;
      if (result.notice) this.log.warn(result.notice);
    } catch (err) {
      // A findings document that cannot be written must not stop a measurement: the run folder has it all.
      if (err instanceof FindingsDiskError) {
        this.log[err.level](err.message);
        // Asked once: a file that stays empty is the user's from the next update on.
        if (err.emptied) this.lastText = undefined;
      } else this.log.error(this.explain('update', err).message);
    }
  }

  private explain(what: 'create' | 'update', err: unknown): Error {
    if (err instanceof FindingsDiskError) return err;
    const code = (err as NodeJS.ErrnoException)?.code;
    const storage = code === 'ENOSPC' || code === 'EDQUOT' || code === 'EROFS';
    // Where the results are, said only where it is true: the document is created before anything is measured,
    // and a disk that refused the document likely refused the run folder beside it too.
    const results =
      what === 'create'
        ? 'Nothing was measured yet.'
        : storage
          ? 'The run folder is likely on the same disk: check that its result.json was written once there is room, or run the phase again.'
          : 'The results are in the run folder either way.';
    if (storage) return new Error(`Could not ${what} the findings document: ${storageProblem(err, this.path).message} ${results}`);
    const reason = err instanceof Error ? err.message : String(err);
    return new Error(`Could not ${what} the findings document ${this.path}: ${reason}. Check that its folder exists and is writable. ${results}`);
  }
}
