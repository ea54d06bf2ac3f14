// The VS Code workbench as a keyboard user drives it, through playwright-core. Selectors lean on
// roles, labels and titles (what a screen reader announces), not on incidental markup.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ConsoleMessage, FrameLocator, Locator, Page } from 'playwright-core';
import { repoRoot } from '../support/codeServer';
import { waitFor } from '../support/waitFor';

export const screenshotDir = join(repoRoot, 'test-output', 'screenshots');

/** Checks every 200 ms until `check` gives a value, failing with `what` after `timeoutMs`. */
export function poll<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  return waitFor(what, check, timeoutMs, 200);
}

/**
 * Records `securitypolicyviolation` events in every frame. A webview's inner frame is loaded as
 * fake.html and then rewritten with document.open/write, which drops listeners: re-add ours after open.
 */
export const recordCspViolations = `(() => {
  const record = (e) => (window.__infbenchCspViolations ||= []).push(e.violatedDirective + ' ' + (e.blockedURI || 'inline'));
  const listen = (doc) => doc.addEventListener('securitypolicyviolation', record, true);
  listen(document);
  const open = Document.prototype.open;
  Document.prototype.open = function (...args) { const r = open.apply(this, args); listen(this); return r; };
})();`;

export class Workbench {
  readonly console: ConsoleMessage[] = [];

  constructor(readonly page: Page) {
    page.on('console', (m) => this.console.push(m));
  }

  async open(url: string): Promise<void> {
    await this.page.goto(url);
    await this.page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    await this.page
      .getByRole('tab', { name: /^Explorer/ })
      .first()
      .waitFor({ timeout: 60_000 });
  }

  /** Console lines that report a Content-Security-Policy refusal, from any frame. */
  cspConsoleErrors(): string[] {
    return this.console.map((m) => m.text()).filter((t) => /Content Security Policy|Refused to (load|execute|apply|connect|frame)/i.test(t));
  }

  get quickInput(): Locator {
    return this.page.locator('.quick-input-widget');
  }

  /** The quick input's text field (a textbox in VS Code 1.100, a combobox in some releases). */
  get inputBox(): Locator {
    return this.quickInput.getByRole('textbox').or(this.quickInput.getByRole('combobox')).first();
  }

  /** F1, the command's title, Enter: the command palette as users run it. */
  async runCommand(title: string): Promise<void> {
    await this.page.keyboard.press('Escape');
    await this.webviewFocusLanded();
    await this.page.keyboard.press('F1');
    await this.inputBox.waitFor();
    await this.page.keyboard.type(title);
    // Enter runs the highlighted row, so wait for it to be this command: the palette opens on the
    // recently used commands, which may hold this one lower down before the typed filter applies.
    const wanted = new RegExp(`^${escapeRegExp(title)}`);
    await poll(`"${title}" highlighted in the command palette`, async () => {
      const focused = this.quickInput.locator('.monaco-list-row.focused');
      const label = (await focused.count()) ? await focused.first().getAttribute('aria-label') : null;
      return label && wanted.test(label) ? true : undefined;
    }).catch(async (err: Error) => {
      throw new Error(`${err.message}; the palette shows: ${await this.describeQuickInput()}`);
    });
    // In the palette's own box, as answer() does: a focus arriving late must not take the key.
    await this.inputBox.press('Enter');
  }

  /**
   * When focus has just gone back to a webview (a quick input closing returns it to the element that
   * had it), VS Code passes it on to the webview's page a moment later: a 50 ms delayer, then a 'focus'
   * message to the webview's own frame (src/vs/workbench/contrib/webview/browser/webviewElement.ts,
   * _doFocus; pre/index.html, onMessage('focus')). A palette opened before that message lands loses
   * focus to it and closes, with what was typed going into the webview. A person is slower than that
   * window; a test waits for the webview's page to hold focus, as it then does for good.
   */
  private async webviewFocusLanded(): Promise<void> {
    const index = await this.page.evaluate<number>(`[...document.querySelectorAll('iframe.webview')].indexOf(document.activeElement)`);
    if (index < 0) return;
    const outer = await (await this.page.locator('iframe.webview').nth(index).elementHandle())?.contentFrame();
    const inner = await (await outer?.$('#active-frame'))?.contentFrame();
    if (!inner) return; // a webview with no page loaded yet has nothing to pass focus to
    await poll("focus to land in the webview's page", async () => ((await inner.evaluate<boolean>('document.hasFocus()')) ? true : undefined));
  }

  /** What the quick input holds and where focus is, for a failure's message. */
  private async describeQuickInput(): Promise<string> {
    // A string, evaluated in the page: this project's type checking has no DOM library.
    return this.page.evaluate<string>(`(() => {
      const widget = document.querySelector('.quick-input-widget');
      const row = widget?.querySelector('.monaco-list-row.focused');
      const active = document.activeElement;
      return JSON.stringify({
        visible: !!widget && widget.offsetParent !== null,
        value: widget?.querySelector('input')?.value ?? null,
        highlighted: row?.getAttribute('aria-label') ?? null,
        focus: active ? active.tagName.toLowerCase() + (active.className ? '.' + String(active.className).trim().split(/\\s+/).join('.') : '') : null,
      });
    })()`);
  }

  /**
   * Chooses an item of the open context menu as a keyboard user does: the pointer highlights it, Enter
   * runs it. A mouse click can be lost: VS Code's menu items take mouse-ups only 100 ms after they
   * render, to avoid accidental clicks (src/vs/base/browser/ui/menu/menu.ts, runOnceToEnableMouseUp),
   * and a loaded machine stretches that; the menu's Enter key has no such delay.
   */
  async chooseMenuItem(name: string | RegExp): Promise<void> {
    const item = this.page.getByRole('menuitem', typeof name === 'string' ? { name, exact: true } : { name }).first();
    await item.hover();
    await poll(`the menu item ${name} highlighted`, async () =>
      (await item.evaluate((el) => el.closest('.action-item')?.classList.contains('focused') ?? false)) ? true : undefined,
    );
    await this.page.keyboard.press('Enter');
    await item.waitFor({ state: 'detached' });
  }

  /** Waits for a quick-input prompt whose title or placeholder matches, then types `text` (if any) and Enter. */
  async answer(prompt: RegExp, text?: string): Promise<void> {
    await this.quickInput
      .getByText(prompt)
      .first()
      .waitFor({ timeout: 15_000 })
      .catch(async () => {
        const shown = (await this.quickInput.isVisible()) ? await this.quickInput.innerText() : '(no prompt shown)';
        throw new Error(`expected a prompt matching ${prompt}; the quick input shows: ${shown}`);
      });
    if (text !== undefined) await this.inputBox.fill(text);
    // Enter in the prompt's own box (focused first, as a user who clicks into it): a webview that
    // was given focus back when the previous quick input closed can take it a moment after this
    // prompt opened (see webviewFocusLanded); the prompt stays open (ignoreFocusOut) but a key
    // pressed wherever focus is would go to the webview.
    await this.inputBox.press('Enter');
  }

  /**
   * Opens a side-bar view container from its activity-bar icon, as a user clicks it, and waits for the
   * focus that opening gives its view: the view takes it once its tree has rendered, which on a loaded
   * machine can come after its rows show, and a palette opened before then loses focus to the tree and
   * closes (CI's Add Target failure: the palette gone, the Inference Bench tree focused).
   */
  async openSideBar(name: string): Promise<void> {
    await this.activityBarItem(name).click();
    await poll(`focus in the ${name} side bar after a click on its icon`, async () =>
      (await this.page.evaluate<boolean>(
        `(() => {
          const sideBar = document.activeElement?.closest('.part.sidebar');
          const title = sideBar?.querySelector('.composite.title .title-label')?.textContent ?? '';
          return title.toLowerCase().startsWith(${JSON.stringify(name.toLowerCase())});
        })()`,
      ))
        ? true
        : undefined,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; ${await this.describeQuickInput()}`);
    });
  }

  /** The activity-bar entry with this name (its aria label). */
  activityBarItem(name: string): Locator {
    return this.page.getByRole('tab', { name: new RegExp(`^${escapeRegExp(name)}`) }).first();
  }

  /** The content of the webview that has focus: two iframes down. */
  webview(): FrameLocator {
    return this.page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  }

  async screenshot(name: string): Promise<string> {
    mkdirSync(screenshotDir, { recursive: true });
    const file = join(screenshotDir, `${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }
}

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
