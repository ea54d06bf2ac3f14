// What the user can do about a failure, as data. The agent and the core name the remedy (a flag to
// pass, a command to run) where they write the hint, as a numbered slot: "give its URL as seen from
// this host with {0}". Each front end fills the slots in its own words: the CLI with the flag or
// command line, VS Code with the target's setting or the command palette entry. Nothing reads the
// hint's words to find the remedy.

import { REMEDY_COMMANDS, REMEDY_FLAGS, WORKLOAD_REMEDY_FLAGS } from './remedyFlags';

export { REMEDY_COMMANDS, REMEDY_FLAGS, WORKLOAD_REMEDY_FLAGS };
/** The CLI flags a remedy can name, as the agent's events.py lists them. */
export type RemedyFlag = (typeof REMEDY_FLAGS)[number] | WorkloadRemedyFlag;
/** A macro workload's own flag: the front ends word it from the workload's row in the agent's table. */
export type WorkloadRemedyFlag = (typeof WORKLOAD_REMEDY_FLAGS)[number];
/** The commands a remedy can name: a phase to run, or a trace to analyse. */
export type RemedyCommand = (typeof REMEDY_COMMANDS)[number];

export type Remedy =
  /** Pass a flag; `value` is an example ("--python /opt/venv/bin/python3"). */
  | { kind: 'flag'; flag: RemedyFlag; value?: string }
  /** Run a command; `flags` are its flags on the CLI ("micro --stop-server"), which VS Code asks for itself. */
  | { kind: 'command'; command: RemedyCommand; flags?: string[] };

/** A front end's words for remedies. */
export interface RemedyWords {
  remedy(r: Remedy): string;
  /** Its own whole remedy for an error code, where it has one; the hint is said otherwise. */
  forCode?(code: string): string | undefined;
}

/** What the agent or the core says went wrong, with the hint and its remedies as data. */
export interface Hinted {
  code?: string;
  message: string;
  /** The next step, with `{0}`, `{1}`… where its remedies go. */
  hint?: string;
  remedies?: Remedy[];
}

const COMMAND_LINES: Record<RemedyCommand, string> = {
  macro: 'infbench macro',
  micro: 'infbench micro',
  profile: 'infbench profile',
  probe: 'infbench probe',
  analyze: 'infbench analyze TRACE...',
};

/** The CLI's words: the flag, or the command line to type. */
export const CLI_WORDS: RemedyWords = {
  remedy: (r) => (r.kind === 'flag' ? [r.flag, r.value].filter(Boolean).join(' ') : `\`${[COMMAND_LINES[r.command], ...(r.flags ?? [])].join(' ')}\``),
};

/** The hint with each `{n}` slot said by `words`; a slot with no remedy stays as written. */
export function sayHint(hint: string, remedies: readonly Remedy[] | undefined, words: RemedyWords = CLI_WORDS): string {
  // The slots are the producer's placeholders for its own remedies, not words to recognise.
  return hint.replace(/\{(\d+)\}/g, (slot, n: string) => {
    const r = remedies?.[Number(n)];
    return r ? words.remedy(r) : slot;
  });
}

/** "what failed — what to do", the remedy in `words`: the front end's own for the code where it has one. */
export function sayHinted(e: Hinted, words: RemedyWords = CLI_WORDS): string {
  const own = e.code ? words.forCode?.(e.code) : undefined;
  const next = own ?? (e.hint ? sayHint(e.hint, e.remedies, words) : '');
  return next ? `${e.message} — ${next}` : e.message;
}
