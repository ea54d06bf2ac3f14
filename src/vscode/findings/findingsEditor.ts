import { existsSync } from 'node:fs';
import * as vscode from 'vscode';
import { FindingsUpdate, ResultSink } from '../../core/campaign/phaseContext';
import { applyUpdateOnDisk, createSkeletonIfAbsent, FindingsDiskError, readFindingsText } from '../../core/findings/diskDocument';
import { fileTypeProblem, realPathOf } from '../../core/findings/location';
import { campaignUpdate, ProbeInfo } from '../../core/findings/skeleton';
import { LabeledTable, tablesInDocument } from '../../core/findings/storedTables';
import { applyFindingsUpdate } from '../../core/findings/update';
import { Logger } from '../../core/log';
import { Disposable } from '../disposable';

export interface FindingsEditorOptions {
  /** The workspace folder the document must stay inside; every write on disk is checked against it when written. */
  workspace?: () => string | undefined;
  /** How long updates of one section are gathered before they land (rows of a sweep arrive fast). */
  batchMs?: number;
  /** How often an edit is tried again when the user typed between reading and applying. */
  maxAttempts?: number;
  /** Show the document (without taking focus) when a run sends its first update; default true. */
  showOnNewRun?: boolean;
  /**
   * Whether a Markdown preview of the document is opened beside it when the tool shows it (the
   * inferenceBench.findingsPreview setting, read each time); default false.
   */
  previewBeside?: () => boolean;
  now?: () => Date;
}

interface Pending {
  update: FindingsUpdate;
  waiters: { resolve: () => void; reject: (err: Error) => void }[];
}

/** The built-in Markdown extension's preview, as a custom editor (so that its column can be chosen). */
const MARKDOWN_PREVIEW = 'vscode.markdown.preview.editor';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long VS Code may take to reload a clean document from the file the tool wrote (its watcher reports within a second). */
const RELOAD_WAIT_MS = 5000;

/** A document's text as the buffer and the file both hold it: line breaks and a byte-order mark aside. */
const comparable = (text: string) => text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');

/**
 * Keeps the campaign's findings document filled in while phases run, without ever taking a
 * keystroke from the user or saving one they have not saved: updates are gathered per section for a
 * moment (a sweep sends a row at a time), then each lands
 * - on disk when the document holds nothing unsaved (closed, or open and clean): the same guarded
 *   write as the CLI's, and VS Code reloads a clean document from it, so its tab never shows unsaved
 *   for the tool's own writes;
 * - in the editor's buffer when the user has unsaved text there: one WorkspaceEdit computed from the
 *   document's text at that instant, tried again if the user typed in between, and never saved (the
 *   save would take their unsaved text with it). The file then gets the update once the buffer is
 *   clean again: saved by the user (the results go with it), or reverted or closed without saving
 *   (the update is written on disk then). Writing the file while the buffer is dirty would make the
 *   user's next save stop on "the file is newer".
 * It is the VS Code front end's ResultSink.findings.
 */
export class FindingsEditor extends Disposable implements Pick<ResultSink, 'findings'> {
  private readonly pending = new Map<string, Pending>();
  /** Sections written into the document, in the buffer or on disk (a region gone since was deleted by the user). */
  private readonly written = new Set<string>();
  /** Sections written into the file itself: the buffer may hold some the file does not yet. */
  private readonly writtenOnDisk = new Set<string>();
  /** The newest update of each section that went only into a dirty buffer: the file gets it once the buffer is clean or closed. */
  private readonly owedToDisk = new Map<string, FindingsUpdate>();
  private readonly latestTables = new Map<string, LabeledTable[]>();
  /** The file's text as last read or written (a file suddenly empty is not the user's). */
  private lastDiskText?: string;
  private timer: NodeJS.Timeout | undefined;
  /** Flushes run one after another, so two sections updating at once never race each other. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    /** The document's path now (settings may change between runs); undefined without a workspace. */
    private readonly resolvePath: () => string | undefined,
    private readonly log: Logger,
    private readonly options: FindingsEditorOptions = {},
  ) {
    super();
    // Updates still gathered when the extension goes away are written rather than dropped.
    this._register({ dispose: () => void this.flush() });
    // A buffer that turns clean (saved, reverted) or is closed lets the owed updates reach the file:
    // after a save they are already there (the write finds nothing to change); after a revert or a
    // close without saving they are written now, and VS Code reloads a clean buffer from the file.
    const settle = (doc: vscode.TextDocument) => {
      if (this.owedToDisk.size && doc.uri.scheme === 'file' && (doc.isClosed || !doc.isDirty) && this.isOurDocument(doc)) this.payOwed();
    };
    this._register(vscode.workspace.onDidChangeTextDocument((e) => settle(e.document)));
    this._register(vscode.workspace.onDidSaveTextDocument(settle));
    this._register(vscode.workspace.onDidCloseTextDocument(settle));
  }

  private isOurDocument(doc: vscode.TextDocument): boolean {
    try {
      const file = this.resolvePath();
      return !!file && doc.uri.fsPath === vscode.Uri.file(file).fsPath;
    } catch {
      return false; // a setting naming a file outside the workspace: nothing is written there
    }
  }

  private payOwed(): void {
    const owed = [...this.owedToDisk.values()];
    this.owedToDisk.clear();
    for (const update of owed)
      this.queue(update).catch((err: unknown) => this.log.warn(`Could not write "${update.heading || update.sectionId}" to the findings file: ${String(err)}`));
  }

  /** The document's path, or an error that says how to get one. */
  path(): string {
    const file = this.resolvePath();
    if (!file)
      throw new Error('Inference Bench: open a folder first; the findings document (setting inferenceBench.findingsDocument) lives in the workspace folder.');
    // The same rule as on disk: a FIFO or a device is never opened (the editor would block on one, or write into it).
    let problem: string | undefined;
    try {
      problem = fileTypeProblem(realPathOf(file));
    } catch {
      problem = `${file} is a symlink that leads nowhere`;
    }
    if (problem) {
      throw new FindingsDiskError(
        `Inference Bench does not write the findings document: ${problem}. Set inferenceBench.findingsDocument to a plain file of the workspace; each run's results still go to its run folder.`,
        'error',
      );
    }
    return file;
  }

  /**
   * Creates the document with its skeleton if it does not exist, and shows it in the first editor
   * column, beside the results. With probe information the campaign header is filled in.
   */
  async ensureOpen(probe?: ProbeInfo, options: { focus?: boolean; preview?: boolean } = {}): Promise<vscode.TextEditor> {
    const file = this.path();
    if (createSkeletonIfAbsent(file, probe, this.options.workspace?.())) this.log.info(`Created the findings document ${file}`);
    const uri = vscode.Uri.file(file);
    const shown = vscode.window.visibleTextEditors.find((e) => e.document.uri.fsPath === uri.fsPath);
    const editor =
      shown && !options.focus
        ? shown
        : await vscode.window.showTextDocument(uri, { viewColumn: shown?.viewColumn ?? vscode.ViewColumn.One, preserveFocus: !options.focus, preview: false });
    if (options.preview !== false) await this.showPreviewOf(editor);
    if (probe) await this.update(campaignUpdate(probe));
    return editor;
  }

  private async showPreviewOf(editor: vscode.TextEditor): Promise<void> {
    if (this.options.previewBeside?.()) await this.showPreview(editor.document.uri, editor.viewColumn ?? vscode.ViewColumn.One);
  }

  /**
   * The document's tables wrap into unreadable lines in a text column beside the results, so its
   * rendered preview goes in the next column (the results' one, as a tab: charts stay where they
   * were), without focus. It follows the document's edits as they land. One preview is enough:
   * a document that already has one is left as it is.
   */
  private async showPreview(uri: vscode.Uri, textColumn: vscode.ViewColumn): Promise<void> {
    const previewed = vscode.window.tabGroups.all.some((group) =>
      group.tabs.some((tab) => tab.input instanceof vscode.TabInputCustom && tab.input.viewType === MARKDOWN_PREVIEW && tab.input.uri.fsPath === uri.fsPath),
    );
    if (previewed) return;
    try {
      await vscode.commands.executeCommand('vscode.openWith', uri, MARKDOWN_PREVIEW, { viewColumn: textColumn + 1, preserveFocus: true, preview: false });
    } catch (err) {
      // VS Code's built-in Markdown extension disabled: the text editor alone still works.
      this.log.warn(
        `Could not open a preview of the findings document (is the built-in Markdown extension enabled?): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  /** ResultSink.findings: never throws into a phase; a failure is logged with what to do. */
  findings(update: FindingsUpdate): void {
    this.update(update).catch((err: unknown) => {
      if (err instanceof FindingsDiskError) this.log[err.level](err.message);
      else this.log.error(err instanceof Error ? err.message : String(err));
    });
  }

  /**
   * Queues an update; resolves once it (or a later update of the same section, which replaces it)
   * is in the document.
   */
  update(update: FindingsUpdate): Promise<void> {
    const landed = this.queue(update);
    // A run's first update brings the document into view beside the results; a user who closes
    // it mid-run is not pestered again until the next run (and its updates then go to disk).
    if (!this.latestTables.has(update.sectionId) && (this.options.showOnNewRun ?? true)) {
      // The text at once, its preview once the batch that carries this update is in the document
      // (a probe sends two sections at once): the preview then renders them from the start. An edit
      // that reaches a preview still loading its page can be lost to it (the Markdown extension posts
      // `updateContent` to its webview, extensions/markdown-language-features/src/preview/preview.ts),
      // leaving it a section behind until the next edit.
      const warn = (err: unknown) => this.log.warn(`Could not show the findings document: ${err instanceof Error ? err.message : String(err)}`);
      const batchWritten = landed.catch(() => undefined).then(() => this.chain);
      void Promise.all([this.ensureOpen(undefined, { preview: false }), batchWritten])
        .then(([shown]) => this.showPreviewOf(shown))
        .catch(warn);
    }
    this.latestTables.set(
      update.sectionId,
      update.tables.map((table) => ({ label: table.title || update.heading, detail: `${update.heading} · ${update.sectionId}`, table })),
    );
    return landed;
  }

  /** update()'s batching: sections gathered for batchMs, then written in one flush. */
  private queue(update: FindingsUpdate): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const entry = this.pending.get(update.sectionId);
      if (entry) {
        entry.update = update;
        entry.waiters.push({ resolve, reject });
      } else {
        this.pending.set(update.sectionId, { update, waiters: [{ resolve, reject }] });
      }
      // The first update of a batch sets the clock; later ones join it, so a steady stream still lands every batchMs.
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.options.batchMs ?? 150);
    });
  }

  /** Writes everything queued now, without waiting for the batch window. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = [...this.pending.values()];
    this.pending.clear();
    this.chain = this.chain.then(async () => {
      for (const entry of batch) {
        try {
          await this.write(entry.update);
          entry.waiters.forEach((w) => w.resolve());
        } catch (err) {
          const error = err instanceof Error ? err : new Error(String(err));
          entry.waiters.forEach((w) => w.reject(error));
        }
      }
    });
    return this.chain;
  }

  /** Result tables for "Insert Result Here": this session's updates, then those in the document. */
  resultTables(): LabeledTable[] {
    const fresh = [...this.latestTables.values()].flat();
    let stored: LabeledTable[] = [];
    try {
      const file = this.path();
      const doc = this.openDocument(file);
      stored = tablesInDocument(doc ? doc.getText() : (readFindingsText(file) ?? ''));
    } catch {
      // no workspace or an unreadable document: offer what this session produced
    }
    const seen = new Set(fresh.map((t) => `${t.label}\u0000${t.detail}`));
    return [...fresh, ...stored.filter((t) => !seen.has(`${t.label}\u0000${t.detail}`))];
  }

  private openDocument(file: string): vscode.TextDocument | undefined {
    const uri = vscode.Uri.file(file);
    return vscode.workspace.textDocuments.find((d) => !d.isClosed && d.uri.scheme === 'file' && d.uri.fsPath === uri.fsPath);
  }

  private async write(update: FindingsUpdate): Promise<void> {
    const file = this.path();
    const now = this.options.now?.() ?? new Date();
    const maxAttempts = this.options.maxAttempts ?? 40;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const doc = this.openDocument(file);
      if (!doc || !doc.isDirty) {
        const diskText = this.writeOnDisk(file, update, now);
        if (doc && !doc.isClosed) await this.followDisk(doc, update, diskText, now);
        return;
      }
      // Read, compute and hand the edit over without yielding in between: the edit then carries
      // exactly the version it was computed from, and VS Code refuses it if the user typed since.
      if (await this.editBuffer(doc, update, now)) {
        this.owedToDisk.set(update.sectionId, update);
        return;
      }
      this.log.debug(`Findings edit for ${update.sectionId} did not apply (the document changed underneath, attempt ${attempt}); trying again.`);
      await sleep(Math.min(20 * attempt, 250));
    }
    throw new Error(
      `Inference Bench could not write "${update.heading || update.sectionId}" into ${file}: the document kept changing or refused the edit (is it read-only?). The results are in the run folder; run "Inference Bench: Insert Result Here" to add them by hand.`,
    );
  }

  /** The same guarded write as the CLI's: never over a save in progress, never into a read-only file. Returns the file's text after it. */
  private writeOnDisk(file: string, update: FindingsUpdate, now: Date): string {
    if (!existsSync(file) && createSkeletonIfAbsent(file, undefined, this.options.workspace?.())) this.log.info(`Created the findings document ${file}`);
    let result;
    try {
      result = applyUpdateOnDisk(file, update, {
        workspace: this.options.workspace?.(),
        now,
        previouslyWritten: this.writtenOnDisk.has(update.sectionId),
        previousText: this.lastDiskText,
      });
    } catch (err) {
      // Asked once: a file that stays empty is the user's from the next update on.
      if (err instanceof FindingsDiskError && err.emptied) this.lastDiskText = undefined;
      throw err;
    }
    this.lastDiskText = result.diskText;
    this.written.add(update.sectionId);
    this.writtenOnDisk.add(update.sectionId);
    if (result.notice) this.log.warn(result.notice);
    return result.diskText;
  }

  /** Applies the update to the buffer as one edit; false when VS Code refused it (the user typed since it was computed). */
  private async editBuffer(doc: vscode.TextDocument, update: FindingsUpdate, now: Date): Promise<boolean> {
    const result = applyFindingsUpdate(doc.getText(), update, { now, previouslyWritten: this.written.has(update.sectionId) });
    if (!result.edits.length) return true;
    const edit = new vscode.WorkspaceEdit();
    for (const e of result.edits) edit.replace(doc.uri, new vscode.Range(doc.positionAt(e.start), doc.positionAt(e.end)), e.text);
    if (!(await vscode.workspace.applyEdit(edit))) return false;
    this.written.add(update.sectionId);
    if (result.notice) this.log.warn(result.notice);
    return true;
  }

  /**
   * Waits until VS Code has reloaded the clean buffer from the file just written, so that the next
   * update, and the user, see what is on disk. A user who typed before the reload reached the buffer
   * keeps their text (VS Code reloads no dirty buffer): the update then goes into the buffer too, and
   * their save will ask whether to overwrite the file, which holds nothing the buffer lacks but their text.
   */
  private async followDisk(doc: vscode.TextDocument, update: FindingsUpdate, diskText: string, now: Date): Promise<void> {
    const same = () => comparable(doc.getText()) === comparable(diskText);
    if (same()) return;
    const reloaded = await new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        listening.dispose();
        resolve(ok);
      };
      const listening = vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document !== doc) return;
        if (same()) done(true);
        else if (doc.isDirty) done(false);
      });
      // VS Code hears of the file through its watcher; one that excludes the file never reloads it.
      const timer = setTimeout(() => done(same()), RELOAD_WAIT_MS);
    });
    if (reloaded || doc.isClosed) return;
    if (doc.isDirty) {
      for (let attempt = 0; attempt < 10 && !(await this.editBuffer(doc, update, now)); attempt++) await sleep(20);
      return;
    }
    this.log.warn(
      `VS Code has not reloaded the findings document from disk after ${RELOAD_WAIT_MS / 1000} s (is it excluded by files.watcherExclude?); the file holds the results: File: Revert File shows them.`,
    );
  }
}
