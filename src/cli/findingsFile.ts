import { chmodSync, existsSync, linkSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { FindingsUpdate, ResultSink } from '../core/campaign/phaseContext';
import { Logger, silentLogger } from '../core/log';
import { campaignUpdate, ProbeInfo, renderSkeleton } from '../core/findings/skeleton';
import { applyFindingsUpdate } from '../core/findings/update';

/**
 * The CLI's findings document: the same file the extension keeps open, edited on disk. Each update
 * re-reads the file (the user may have edited it in an editor since), changes only the tool's own
 * regions, and replaces the file in one rename so that a reader never sees half a document.
 */
export class FindingsFile implements Pick<ResultSink, 'findings'> {
  private readonly written = new Set<string>();

  constructor(
    readonly path: string,
    private readonly log: Logger = silentLogger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Creates the skeleton if the document does not exist yet; fills the header in from the probe. */
  ensure(probe?: ProbeInfo): void {
    if (!existsSync(this.path)) {
      const tmp = this.tempPath(this.path);
      writeFileSync(tmp, renderSkeleton(basename(this.path), probe));
      try {
        // link() fails if the file appeared meanwhile: never replace a document someone just created.
        linkSync(tmp, this.path);
        this.log.info(`Created the findings document ${this.path}`);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw this.explain('create', err);
      } finally {
        unlinkSync(tmp);
      }
    }
    if (probe) this.findings({ ...campaignUpdate(probe) });
  }

  findings(update: FindingsUpdate): void {
    try {
      this.apply(update);
    } catch (err) {
      // A findings document that cannot be written must not stop a measurement: the run folder has it all.
      this.log.error(this.explain('update', err).message);
    }
  }

  private apply(update: FindingsUpdate): void {
    if (!existsSync(this.path)) this.ensure();
    const file = realpathSync(this.path);
    const before = readFileSync(file, 'utf8');
    const result = applyFindingsUpdate(before, update, { now: this.now(), previouslyWritten: this.written.has(update.sectionId) });
    this.written.add(update.sectionId);
    if (result.notice) this.log.warn(result.notice);
    if (!result.edits.length) return;
    writeFileAtomic(file, result.text, this.tempPath(file));
  }

  private tempPath(file: string): string {
    return join(dirname(file), `.${basename(file)}.${process.pid}.${Math.random().toString(36).slice(2, 8)}.tmp`);
  }

  private explain(what: string, err: unknown): Error {
    const reason = err instanceof Error ? err.message : String(err);
    return new Error(
      `Could not ${what} the findings document ${this.path}: ${reason}. Check that its folder exists and is writable; the results are in the run folder either way.`,
    );
  }
}

/** Writes a sibling temp file and renames it over the target, keeping the target's permissions. */
export function writeFileAtomic(file: string, text: string, tmp = `${file}.${process.pid}.tmp`): void {
  writeFileSync(tmp, text);
  try {
    if (existsSync(file)) chmodSync(tmp, statSync(file).mode & 0o7777);
    renameSync(tmp, file);
  } catch (err) {
    if (existsSync(tmp)) unlinkSync(tmp);
    throw err;
  }
}
