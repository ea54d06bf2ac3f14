import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { escapeHtml } from '../../shared/html';

/**
 * The HTML of the results panel and the kernel-breakdown view (one app; `view` picks which): a strict Content-Security-Policy where scripts run only with this
 * page's nonce, styles and fonts come only from the extension, and nothing else loads.
 */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, title: string, view: 'results' | 'breakdown' = 'results'): string {
  const nonce = randomBytes(16).toString('base64');
  const asset = (...p: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, ...p)).toString();
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset('media', 'codicons', 'codicon.css')}">
<link rel="stylesheet" href="${asset('media', 'webview.css')}">
<title>${escapeHtml(title)}</title>
</head>
<body data-view="${view}">
<div id="app" aria-live="polite"></div>
<script nonce="${nonce}" src="${asset('dist', 'webview.js')}"></script>
</body>
</html>`;
}
