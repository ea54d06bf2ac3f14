// Names from a trace (kernels, annotations, devices) are text an unknown program wrote: shown raw,
// an ESC or BEL in one sets a terminal's title or colours, and a bidi override reorders what a
// webview shows. Everything that prints or renders such a name goes through printable().

// C0 and C1 controls, DEL, and the bidi embedding, override and isolate marks.
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** The text with each control character replaced by U+FFFD, so that it shows where one was. */
export function printable(text: string): string {
  UNPRINTABLE.lastIndex = 0;
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE, '\ufffd') : text;
}
