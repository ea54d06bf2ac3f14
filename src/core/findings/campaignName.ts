// The findings document's name when none is set: the campaign's model, hardware and bench number,
// as `k25b6000bench1.md` (Kimi-K2.5 on RTX PRO 6000 Blackwell, first bench) was named by hand.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ProbeResult } from '../../remote/agentProtocol';
import { resultPath, runsRoot } from '../runs/runFolder';
import { endMarker, markerId } from './markers';
import { CAMPAIGN_SECTION_ID } from './skeleton';

/** The document when nothing has been probed yet and the workspace holds none of the tool's. */
export const UNPROBED_FINDINGS_DOCUMENT = 'findings.md';

/** "moonshotai/Kimi-K2.5" → "k25", "meta-llama/Llama-3.1-70B" → "l31", "Qwen3-8B" → "q3": the family's initial and its version. */
export function modelShortName(model: string): string {
  const name = (model.split('/').pop() ?? model).toLowerCase();
  const words = name.split(/[-_\s]+/).filter(Boolean);
  const initial = name.match(/[a-z]/)?.[0] ?? '';
  // The version is the first word with a digit that is not a size ("70b", "8x7b" are sizes).
  const version = words.find((w) => /\d/.test(w) && !/^\d+(\.\d+)?[bm]$/.test(w) && !/^\d+x\d+[bm]$/.test(w));
  const digits = version?.replace(/^[a-z]+(?=\d)/, '').replace(/[^a-z0-9]/g, '') ?? '';
  if (digits) return `${initial}${digits}`;
  return name.replace(/[^a-z0-9]/g, '').slice(0, 8) || 'model';
}

const ARCHITECTURE_INITIALS: Record<string, string> = { blackwell: 'b', hopper: 'h', ada: 'ada', ampere: 'a', turing: 't', volta: 'v' };

/** "NVIDIA H200" → "h200", "NVIDIA RTX PRO 6000 Blackwell Server Edition" → "b6000", "NVIDIA GeForce RTX 4090" → "rtx4090". */
export function gpuShortName(gpu: string): string {
  const words = gpu
    .toLowerCase()
    .split(/[\s-]+/)
    .filter((w) => w && w !== 'nvidia');
  // A product name of letters then digits (H200, A100, L40S, GB200) says it all.
  const product = words.find((w) => /^[a-z]{1,3}\d{2,}[a-z]*$/.test(w));
  if (product) return product.match(/^[a-z]+\d+/)![0];
  const index = words.findIndex((w) => /^\d{3,}$/.test(w));
  if (index < 0)
    return (
      words
        .join('')
        .replace(/[^a-z0-9]/g, '')
        .slice(0, 8) || 'gpu'
    );
  const architecture = words.find((w) => ARCHITECTURE_INITIALS[w]);
  const prefix = architecture ? ARCHITECTURE_INITIALS[architecture] : index > 0 ? words[index - 1].replace(/[^a-z]/g, '') : '';
  return `${prefix}${words[index]}`;
}

/** The name's stem before "bench N": the model's short name, then the GPU's ("cpu" on a host without one). */
export function campaignStem(model: string | undefined, gpu: string | undefined): string | undefined {
  if (!model && !gpu) return undefined;
  return `${model ? modelShortName(model) : ''}${gpu ? gpuShortName(gpu) : 'cpu'}`;
}

/** The model and GPU of the workspace's first probe that saw either: the campaign keeps the name it started with. */
export function firstProbedCampaign(workspace: string): { model?: string; gpu?: string } | undefined {
  const root = runsRoot(workspace);
  if (!existsSync(root)) return undefined;
  // Run folders are named by their start time, so a plain sort is oldest first.
  for (const name of readdirSync(root).sort()) {
    if (!name.endsWith('-probe')) continue;
    let result: ProbeResult | undefined;
    try {
      result = JSON.parse(readFileSync(resultPath(join(root, name)), 'utf8')) as ProbeResult;
    } catch {
      continue; // a probe still running, or one that found nothing
    }
    const model = result.server?.models?.[0]?.id ?? undefined;
    const gpu = result.gpus?.devices?.[0]?.name ?? undefined;
    if (model || gpu) return { model, gpu };
  }
  return undefined;
}

/** Whether the file is one of the tool's findings documents (its title and campaign header). */
function isFindingsDocument(file: string): boolean {
  try {
    const head = readFileSync(file, 'utf8').slice(0, 4096);
    return head.startsWith('# Findings: ') && head.includes(endMarker(markerId(CAMPAIGN_SECTION_ID)));
  } catch {
    return false;
  }
}

/**
 * The findings document's name (relative to the workspace) when the setting names none: the stem of
 * the first probe's model and GPU with the highest bench number already there (bench1 for a new
 * campaign); before any probe, the newest of the tool's documents at the top of the workspace, or
 * findings.md.
 */
export function defaultFindingsDocument(workspace: string): string {
  let names: string[] = [];
  try {
    names = readdirSync(workspace).filter((n) => /\.md$/i.test(n));
  } catch {
    // an unreadable folder: the names below still hold
  }
  const probed = firstProbedCampaign(workspace);
  const stem = probed && campaignStem(probed.model, probed.gpu);
  if (stem) {
    const pattern = new RegExp(`^${stem}bench(\\d+)\\.md$`);
    const benches = names.map((n) => Number(pattern.exec(n)?.[1] ?? 0));
    return `${stem}bench${Math.max(1, ...benches)}.md`;
  }
  const ours = names
    .filter((n) => isFindingsDocument(join(workspace, n)))
    .map((n) => ({ n, mtime: statSync(join(workspace, n)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  return ours[0]?.n ?? UNPROBED_FINDINGS_DOCUMENT;
}
