// A user's regular expression (a kernel family, a step annotation) runs on every kernel name of a
// trace, and names are whatever the trace says: hundreds of kB in a damaged or hostile one. JavaScript's
// engine backtracks, so a pattern such as (a+)+$ takes exponential time, and .*.*.*x cubic time, on
// such a name: the analysis hangs. Rather than a second engine, patterns that can backtrack without
// bound are refused with the reason (checked from the source, no trial run), and names are matched
// up to MAX_MATCHED_NAME characters, which bounds the polynomial cases that remain.

/** Characters of a name a user's pattern sees: kernel names from C++ templates run to a few thousand. */
export const MAX_MATCHED_NAME = 4096;

/** The highest power of a name's length a pattern's time may grow with: n^2 over MAX_MATCHED_NAME characters is milliseconds. */
const MAX_POWER = 2;

/** Why a pattern can take time without bound on a long name, or undefined when it cannot. */
export function unboundedBacktracking(source: string): string | undefined {
  // One entry per open group: whether its body holds a quantifier or an alternation.
  const groups: { start: number; risky: boolean }[] = [];
  let unbounded = 0;
  let lastGroup: { start: number; risky: boolean } | undefined;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    const closedGroup = lastGroup;
    lastGroup = undefined;
    if (c === '\\') {
      if (/[1-9k]/.test(source[i + 1] ?? ''))
        return `it uses a backreference (${source.slice(i, i + 2)}), which can take exponential time on a long kernel name. Write it without one`;
      i++;
      continue;
    }
    if (c === '[') {
      // A character class: its content is one character, whatever it holds.
      i++;
      while (i < source.length && source[i] !== ']') i += source[i] === '\\' ? 2 : 1;
      continue;
    }
    if (c === '(') {
      groups.push({ start: i, risky: false });
      continue;
    }
    if (c === ')') {
      lastGroup = groups.pop();
      if (lastGroup?.risky && groups.length) groups[groups.length - 1].risky = true;
      continue;
    }
    if (c === '|') {
      if (groups.length) groups[groups.length - 1].risky = true;
      continue;
    }
    const repeats = c === '*' || c === '+' || (c === '{' && /^\{\d+(,\d*)?\}/.test(source.slice(i)));
    if (!repeats) continue;
    if (c === '*' || c === '+' || /^\{\d+,\}/.test(source.slice(i))) unbounded++;
    if (closedGroup?.risky) {
      const group = source.slice(closedGroup.start, i + 1);
      return `it repeats a group that holds a quantifier or an alternation (${group}), which can take exponential time on a long kernel name. Write it without a quantifier inside a repeated group: /(a+)+x/ matches what /a+x/ does, /(a|b)*x/ what /[ab]*x/ does`;
    }
    if (groups.length) groups[groups.length - 1].risky = true;
  }
  // A pattern not anchored with ^ is tried at every position of the name: one more power of its length.
  const powers = unbounded + (source.startsWith('^') ? 0 : 1);
  if (powers > MAX_POWER)
    return `it holds ${unbounded} unbounded quantifier(s) (* + {n,})${source.startsWith('^') ? '' : ' and no ^ anchor'}, so its time grows with a long kernel name's length to the power ${powers}. Anchor it with ^ or use fewer .* (/.*a.*b/ finds what /a.*b/ does)`;
  return undefined;
}

/** Compiles a user's pattern, or throws saying what is wrong with it and what to do; `what` names it ("The kernel family "x""). */
export function compileUserPattern(what: string, source: string, flags = ''): RegExp {
  const why = unboundedBacktracking(source);
  if (why) throw new Error(`${what} has the pattern /${source}/, refused: ${why}.`);
  try {
    return new HeadRegExp(source, flags);
  } catch (err) {
    throw new Error(`${what} has an invalid pattern /${source}/: ${(err as Error).message}.`);
  }
}

/** A user's pattern: test() and exec() see a name's first MAX_MATCHED_NAME characters only. */
class HeadRegExp extends RegExp {
  override exec(text: string): RegExpExecArray | null {
    return super.exec(text.length > MAX_MATCHED_NAME ? text.slice(0, MAX_MATCHED_NAME) : text);
  }
}
