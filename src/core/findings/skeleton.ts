import { FindingsUpdate } from './findingsUpdate';
import { beginMarker, endMarker, markerId } from './markers';
import { renderUpdate } from './render';
import { NOTES_TITLE, PHASE_SECTIONS } from './sections';

/** What the probe found, in words; every field optional because the document is made before it runs. */
export interface ProbeInfo {
  /** The target's name and how it is reached ("h200-box over SSH", "this machine"). */
  target?: string;
  /** GPUs, driver, CUDA ("8× NVIDIA H200 141 GB, driver 570.86, CUDA 12.8"). */
  hardware?: string;
  /** The served model and its parallelism ("moonshotai/Kimi-K2.5 INT4, TP=8"). */
  model?: string;
  /** Server and version ("vLLM 0.16.0"), with the arguments that matter. */
  server?: string;
}

export const CAMPAIGN_SECTION_ID = 'campaign';

/** The findings document when none is named: the extension's setting default (package.json says it too) and the demo's. */
export const DEFAULT_FINDINGS_DOCUMENT = 'k25b6000bench1.md';

/** The campaign's name as its document is named: `k25b6000bench1.md` → `k25b6000bench1`. */
export function campaignName(fileName: string): string {
  const base = fileName.split(/[\\/]/).pop() ?? fileName;
  return base.replace(/\.(md|markdown)$/i, '') || 'campaign';
}

/** The header region under the title: target, hardware, model and server, as far as they are known. */
export function campaignUpdate(probe: ProbeInfo = {}): FindingsUpdate {
  const fields = [
    ['Target', probe.target],
    ['Hardware', probe.hardware],
    ['Model', probe.model],
    ['Server', probe.server],
  ].filter(([, value]) => value?.trim());
  const lines = fields.length
    ? [fields.map(([label, value]) => `- **${label}:** ${value!.trim()}`).join('\n')]
    : ['_Target, GPUs, server and model: the probe writes them below when it runs._'];
  return { sectionId: CAMPAIGN_SECTION_ID, heading: '', lines, tables: [] };
}

/**
 * The header of a campaign that probed several targets: one line each, so the document describes
 * every machine it measured, not only the one probed last.
 */
export function campaignUpdateForTargets(probes: ProbeInfo[]): FindingsUpdate {
  if (probes.length <= 1) return campaignUpdate(probes[0]);
  const line = (p: ProbeInfo) => `- **${p.target?.trim() || 'target'}:** ${[p.hardware, p.model, p.server].filter((v) => v?.trim()).join(' · ')}`;
  return {
    sectionId: CAMPAIGN_SECTION_ID,
    heading: '',
    lines: [[`- **Targets:** ${probes.length}`, ...probes.map((p) => `  ${line(p)}`)].join('\n')],
    tables: [],
  };
}

/**
 * A new findings document: the title, the campaign header (a tool region, filled in again when the
 * probe reports), one empty section per phase and a place for the user's notes. Everything but
 * the header region belongs to the user from the moment it is written.
 */
export function renderSkeleton(fileName: string, probe?: ProbeInfo, eol = '\n'): string {
  const header = campaignUpdate(probe);
  const content = renderUpdate(header, eol);
  const id = markerId(header.sectionId);
  const out = [`# Findings: ${campaignName(fileName)}`, ''];
  out.push(beginMarker(id, content) + eol + content + endMarker(id), '');
  for (const section of PHASE_SECTIONS) out.push(`## ${section.title}`, '', '');
  out.push(
    `## ${NOTES_TITLE}`,
    '',
    '_Your own notes go here and anywhere else. Inference Bench writes only between its `inference-bench` markers; edit one of its blocks and it becomes yours (the tool then writes a fresh block instead)._',
    '',
  );
  return out.join(eol);
}
