// Flag values several commands parse the same way, with the same message when one is wrong.
import { UsageError } from './command';
import { KernelFamilySpec } from '../core/trace/types';

/** `--family CATEGORY=REGEX`: a kernel family tried before the built-in ones. */
export function kernelFamilyFlag(text: string): KernelFamilySpec {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--family takes CATEGORY=REGEX, got "${text}".`);
  return { category: text.slice(0, eq), pattern: text.slice(eq + 1) };
}

/** A flag that takes a count: 1, 2, 3, ...; undefined when the flag was not given. */
export function positiveWholeNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (!Number.isInteger(v) || v < 1) throw new UsageError(`${flag} takes a positive whole number; got "${text}".`);
  return v;
}
