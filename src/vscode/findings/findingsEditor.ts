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

/**
 * Keeps the campaign's findings document filled in while phases run, without ever taking a
 * keystroke from the user: updates are gathered per section for a moment (a sweep sends a row at a
 * time), then each lands as one WorkspaceEdit computed from the document's text at that instant,
 * tried again if the user typed in between. A document no editor holds is edited on disk.
 * It is the VS Code front end's ResultSink.findings.
 */
export class FindingsEditor extends Disposable implements Pick<ResultSink, 'findings'> {
  private readonly pending = new Map<string, Pending>();
  private readonly written = new Set<string>();
  private readonly latestTables = new Map<string, LabeledTable[]>();
  /** The closed document's text as last read or written on disk (a file suddenly empty is not the user's). */
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
        `Inference Bench does not write the findings document: ${problem}. Set inferenceBench.findingsDocument to a plain file of the workspace; the results are in the run folder either way.`,
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
    if (createSkeletonIfAbsent(file, probe)) this.log.info(`Created the findings document ${file}`);
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
      const previouslyWritten = this.written.has(update.sectionId);
      const doc = this.openDocument(file);
      if (!doc) {
        if (!existsSync(file) && createSkeletonIfAbsent(file)) this.log.info(`Created the findings document ${file}`);
        // The same guarded write as the CLI's: never over a save in progress, never into a read-only file.
        let result;
        try {
          result = applyUpdateOnDisk(file, update, { now, previouslyWritten, previousText: this.lastDiskText });
        } catch (err) {
          // Asked once: a file that stays empty is the user's from the next update on.
          if (err instanceof FindingsDiskError && err.emptied) this.lastDiskText = undefined;
          throw err;
        }
        this.lastDiskText = result.diskText;
        this.written.add(update.sectionId);
        if (result.notice) this.log.warn(result.notice);
        return;
      }
      // Read, compute and hand the edit over without yielding in between: the edit then carries
      // exactly the version it was computed from, and VS Code refuses it if the user typed since.
      const version = doc.version;
      const wasDirty = doc.isDirty;
      const result = applyFindingsUpdate(doc.getText(), update, { now, previouslyWritten });
      if (!result.edits.length) return;
      const edit = new vscode.WorkspaceEdit();
      for (const e of result.edits) edit.replace(doc.uri, new vscode.Range(doc.positionAt(e.start), doc.positionAt(e.end)), e.text);
      const applied = await vscode.workspace.applyEdit(edit);
      if (applied) {
        this.written.add(update.sectionId);
        if (result.notice) this.log.warn(result.notice);
        // A document that held nothing unsaved is saved again, so the file on disk keeps up;
        // one the user is editing stays theirs to save.
        if (!wasDirty && doc.isDirty && doc.version === version + 1) await doc.save();
        return;
      }
      this.log.debug(`Findings edit for ${update.sectionId} did not apply (the document changed underneath, attempt ${attempt}); trying again.`);
      await sleep(Math.min(20 * attempt, 250));
    }
    throw new Error(
      `Inference Bench could not write "${update.heading || update.sectionId}" into ${file}: the document kept changing or refused the edit (is it read-only?). The results are in the run folder; run "Inference Bench: Insert Result Here" to add them by hand.`,
    );
  }
}
