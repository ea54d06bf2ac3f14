// A value read from a stored result or an event: a number only when it is a finite one.

export function finite(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
