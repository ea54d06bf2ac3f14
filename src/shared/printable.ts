// Text an unknown program wrote — names from a trace (kernels, annotations, devices), and everything an
// inference server sends (error bodies, SSE errors, model ids, metric labels, start-up log lines) — is shown
// to the user: raw, an ESC or BEL in it sets a terminal's title or colours and clears the screen, and a bidi
// override reorders what a webview shows. Everything that prints or renders such text goes through
// printable(); the agent's events are cleaned once where they are parsed (cleanEventText).

// C0 and C1 controls, DEL, and the bidi embedding, override and isolate marks.
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** The text with each control character replaced by U+FFFD, so that it shows where one was. */
export function printable(text: string): string {
  UNPRINTABLE.lastIndex = 0;
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE, '\ufffd') : text;
}

/** printable() for a message of several lines (a start-up log's last lines): its line breaks stay. */
export function printableLines(text: string): string {
  return text.includes('\n') ? text.replace(/\r\n/g, '\n').split('\n').map(printable).join('\n') : printable(text);
}

// Fields whose bytes are handed back to the host as they came (paths to fetch, a server's argv and
// environment to start it again): each place that shows one cleans it there.
const KEPT_AS_SENT: ReadonlySet<string> = new Set([
  'argv',
  'env',
  'cwd',
  'path',
  'trace_dir',
  'log_file',
  'executable',
  'command_line',
  'root',
  'unit',
  'container',
]);
// Fields that are messages, several lines allowed.
const MESSAGES: ReadonlySet<string> = new Set(['message', 'hint', 'line']);

/**
 * Cleans, in place, every string of a parsed agent event (values and keys) but the fields kept as sent: an
 * older agent, or an event log written before the agent cleaned server text, may still carry control
 * characters. Returns the same object.
 */
export function cleanEventText<T>(value: T): T {
  return clean(value, 0) as T;
}

function clean(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return printable(value);
  // JSON.parse made the value, so it has no cycles; the depth bound only keeps the stack short.
  if (typeof value !== 'object' || value === null || depth > 64) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = clean(value[i], depth + 1);
    return value;
  }
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (KEPT_AS_SENT.has(key)) continue;
    const cleaned = typeof v === 'string' && MESSAGES.has(key) ? printableLines(v) : clean(v, depth + 1);
    const shown = printable(key);
    if (shown !== key) {
      delete obj[key];
      obj[shown] = cleaned;
    } else if (cleaned !== v) obj[key] = cleaned;
  }
  return obj;
}
