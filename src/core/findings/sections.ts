import MarkdownIt from 'markdown-it';

/**
 * The document's structure as a reader sees it: its headings, found with markdown-it so that a `#`
 * inside a code block or an HTML comment is not mistaken for one, and setext headings count.
 */
export interface Heading {
  level: number;
  text: string;
  /** First line of the heading (0-based). */
  line: number;
  /** Line after the heading (a setext heading spans two lines). */
  endLine: number;
}

// html: true as in VS Code's preview, so HTML blocks (our markers among them) parse as HTML. Only
// the block structure is needed: the inline pass (links, emphasis) is most of the time and is off.
const md = new MarkdownIt({ html: true });
md.core.ruler.disable(['inline', 'linkify', 'replacements', 'smartquotes', 'text_join'], true);

export function headingsOf(text: string): Heading[] {
  // A byte-order mark would hide a title on the first line; a space in its place keeps every offset.
  const tokens = md.parse(text.startsWith('\ufeff') ? ` ${text.slice(1)}` : text, {});
  const headings: Heading[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.type !== 'heading_open' || !t.map) continue;
    const inline = tokens[i + 1];
    headings.push({ level: Number(t.tag.slice(1)), text: inline?.type === 'inline' ? inline.content.trim() : '', line: t.map[0], endLine: t.map[1] });
  }
  return headings;
}

/** A fenced code block that is closed, as line numbers: its opening fence line to its closing one, both included. */
export interface Fence {
  first: number;
  last: number;
}

/**
 * The document's closed fenced code blocks: what is inside one is text the user quotes (a copy of
 * the tool's markers among it), never the tool's own. A fence still open (the user is typing it)
 * does not count: it would hide every block below it until it is closed.
 */
export function closedFences(text: string): Fence[] {
  // Most documents have no fence at all: no need to parse them.
  if (!/^[ \t>]*(```|~~~)/m.test(text)) return [];
  const fences: Fence[] = [];
  const lines = text.split(/\r\n|\r|\n/);
  for (const t of md.parse(text.startsWith('\ufeff') ? ` ${text.slice(1)}` : text, {})) {
    if (t.type !== 'fence' || !t.map) continue;
    const last = t.map[1] - 1;
    const closing = /^[ \t>]*([`~]{3,})[ \t]*$/.exec(lines[last] ?? '');
    if (last > t.map[0] && closing && closing[1][0] === t.markup[0] && closing[1].length >= t.markup.length) fences.push({ first: t.map[0], last });
  }
  return fences;
}

/** The document sections the tool writes into, in the order a findings document reads. */
export type SectionKey = 'macro' | 'micro' | 'profile' | 'budget';

export interface PhaseSection {
  key: SectionKey;
  /** The heading the skeleton writes (and the tool writes again when the user deleted it). */
  title: string;
  /** A user's heading (level 1 or 2) belongs to this section when its text matches. */
  matches: RegExp;
  /** Section id prefixes (the part before the first `-`) that land in this section. */
  prefixes: string[];
}

export const PHASE_SECTIONS: readonly PhaseSection[] = [
  // A comparison of server configurations is a serving benchmark of each: its table goes with the macro runs.
  { key: 'macro', title: 'Macro: serving benchmark', matches: /^macro\b/, prefixes: ['macro', 'configurations'] },
  { key: 'micro', title: 'Micro: kernels and collectives', matches: /^micro\b/, prefixes: ['micro'] },
  { key: 'profile', title: 'Profiler: one decode step', matches: /^profil/, prefixes: ['profile', 'profiler'] },
  {
    key: 'budget',
    title: 'Where the milliseconds go',
    matches: /^where the (milli)?seconds go|^decode[- ]step budget/,
    prefixes: ['budget', 'explain', 'compare', 'where', 'reconcile'],
  },
];

/** Ids of the campaign header region (target, hardware, model) that sits under the title. */
export const CAMPAIGN_PREFIXES = ['campaign', 'probe', 'overview'];

export const NOTES_TITLE = 'Notes';

/** Where a section id's regions go: a phase section, the campaign header, or the document's end. */
export function placeOf(sectionId: string): PhaseSection | 'campaign' | 'end' {
  const prefix = sectionId.toLowerCase().split(/[-_:]/)[0];
  if (CAMPAIGN_PREFIXES.includes(prefix)) return 'campaign';
  return PHASE_SECTIONS.find((s) => s.prefixes.includes(prefix)) ?? 'end';
}

/** A heading's text as matching sees it: lower case, without leading numbering or emphasis marks. */
export function headingKey(text: string): string {
  return text
    .toLowerCase()
    .replace(/[*_`]/g, '')
    .replace(/^[\s\d.)\-:#]+/, '')
    .trim();
}

export interface SectionSpan {
  heading: Heading;
  /** Line where the section ends (exclusive): the next heading of the same or a higher level. */
  endLine: number;
}

/** The first heading of level 1 or 2 that matches the section, with where its section ends. */
export function findSection(headings: Heading[], lineCount: number, matches: (h: Heading) => boolean): SectionSpan | undefined {
  const index = headings.findIndex((h) => h.level <= 2 && matches(h));
  if (index < 0) return undefined;
  const heading = headings[index];
  const next = headings.slice(index + 1).find((h) => h.level <= heading.level);
  return { heading, endLine: next ? next.line : lineCount };
}

export function phaseSection(headings: Heading[], lineCount: number, section: PhaseSection): SectionSpan | undefined {
  return findSection(headings, lineCount, (h) => section.matches.test(headingKey(h.text)));
}

/** The user's notes section: a `## Notes` heading (a title that happens to say "notes" is not one). */
export function notesSection(headings: Heading[], lineCount: number): SectionSpan | undefined {
  return findSection(headings, lineCount, (h) => h.level === 2 && /^(my )?notes\b/.test(headingKey(h.text)));
}
