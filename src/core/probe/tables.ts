// What a probe found, as the tables and lines the terminal, the findings document and the results view show.
import { ProbeResult } from '../../remote/agentProtocol';
import { ProbeView } from '../../shared/results';
import { ResultTable } from '../../shared/table';

export function serverName(r: ProbeResult): string {
  const s = r.server;
  const kind = s.kind === 'vllm' ? 'vLLM' : s.kind === 'sglang' ? 'SGLang' : 'unknown server';
  return `${s.simulated ? 'SIMULATOR (vLLM API)' : kind}${s.version && !s.simulated ? ` ${s.version}` : ''}`;
}

const mib = (v: number | null) => (v === null ? null : v / 1024);

/**
 * What the probe found of the server's API key, in words every front end shares (the findings
 * document, the results view), or undefined where the server wants none. How to give a key is each
 * front end's to say: the CLI's probe output adds the agent's advice, VS Code offers its command.
 */
export function apiKeyState(s: ProbeResult['server']): string | undefined {
  if (!s.auth?.required) return undefined;
  if (s.auth.key_accepted) return 'required, and the key given is accepted';
  const answered = s.auth.status ? ` (HTTP ${s.auth.status})` : '';
  return s.auth.key_given ? `the server refused the key given${answered}` : `this server wants an API key${answered}`;
}

export function gpuTable(r: ProbeResult): ResultTable {
  return {
    id: 'probe-gpus',
    title: 'GPUs',
    columns: [
      { key: 'index', label: 'GPU', digits: 0 },
      { key: 'name', label: 'Name', align: 'left' },
      { key: 'used', label: 'Memory used (GiB)', digits: 1 },
      { key: 'total', label: 'Total (GiB)', digits: 1 },
      { key: 'util', label: 'Util (%)', digits: 0 },
      { key: 'procs', label: 'Processes', align: 'left' },
    ],
    rows: r.gpus.devices.map((d) => ({
      index: d.index,
      name: d.name,
      used: mib(d.memory_used_mib),
      total: mib(d.memory_total_mib),
      util: d.utilization_pct,
      procs:
        r.gpus.processes
          .filter((p) => p.gpu_index === d.index)
          .map((p) => `${p.process_name} (pid ${p.pid}, ${((p.used_memory_mib ?? 0) / 1024).toFixed(1)} GiB)`)
          .join(', ') || '—',
    })),
    note: r.gpus.available ? `driver ${r.gpus.devices[0]?.driver_version ?? '?'}` : (r.gpus.error ?? undefined),
  };
}

/** Readable lines for the terminal and the findings document: the facts, then what to do about problems. */
export function probeSummaryLines(r: ProbeResult): string[] {
  const s = r.server;
  const lines: string[] = [];
  lines.push(`Host ${r.host} · Python ${r.python.version} (${r.python.executable})`);
  const pkgs = Object.entries(r.packages)
    .map(([name, v]) => `${name} ${v ?? '—'}`)
    .join(', ');
  lines.push(`Packages: ${pkgs}`);
  if (!s.reachable) {
    lines.push(`Server: ${s.error ?? `nothing answers at ${s.url}`}`);
  } else {
    lines.push(`Server: ${serverName(r)} at ${s.url}${s.healthy === false ? ' (health check failed)' : ''}${s.kind_evidence ? ` — ${s.kind_evidence}` : ''}`);
    // The terminal's own words: the agent's message with its advice (--api-key, the variables).
    const apiKey = s.auth?.required && !s.auth.key_accepted ? (s.error ?? apiKeyState(s)) : apiKeyState(s);
    if (apiKey) lines.push(`  API key: ${apiKey}`);
    for (const m of s.models) lines.push(`  model ${m.id}${m.max_model_len ? `, max_model_len ${m.max_model_len}` : ''}`);
    const p = s.profiler;
    lines.push(
      `  profiler: ${p.enabled === true ? (p.kind === 'cuda' ? 'CUDA profiler (no torch traces)' : 'enabled') : p.enabled === false ? 'NOT enabled' : 'unknown'}${p.evidence ? ` (${p.evidence})` : ''}`,
    );
    const structure = modelConfigText(s);
    if (structure) lines.push(`  model structure: ${structure}`);
    if (s.parallel)
      lines.push(
        `  parallel: tp ${s.parallel.tp} × pp ${s.parallel.pp} × dp ${s.parallel.dp}${s.parallel.dp_attention ? ' (DP attention)' : ''}: ${s.parallel.ranks} rank(s) write traces`,
      );
  }
  if (s.command_line) lines.push(`  command (pid ${s.pid}): ${s.command_line.join(' ')}`);
  if (!r.gpus.available) lines.push(`GPUs: ${r.gpus.error}`);
  else {
    for (const d of r.gpus.devices) {
      const procs = r.gpus.processes.filter((p) => p.gpu_index === d.index);
      lines.push(
        `GPU ${d.index}: ${d.name}, ${fmtGiB(d.memory_used_mib)} / ${fmtGiB(d.memory_total_mib)} GiB used, ${d.utilization_pct ?? '?'}% busy${procs.length ? ` — ${procs.map((p) => `${p.process_name} pid ${p.pid}`).join(', ')}` : ''}`,
      );
    }
  }
  const network = networkLine(r);
  if (network) lines.push(network);
  return lines;
}

/** The served model's config.json as the probe summarized it: "kimi_k2 (under text_config): 61 layers, hidden 7168, 384 experts, 8 per token — from ...". */
export function modelConfigText(s: ProbeResult['server']): string | undefined {
  const c = s.model_config;
  if (!c) return undefined;
  const facts = [
    c.num_hidden_layers !== undefined ? `${c.num_hidden_layers} layers` : '',
    c.hidden_size !== undefined ? `hidden ${c.hidden_size}` : '',
    c.num_attention_heads !== undefined ? `${c.num_attention_heads} heads${c.num_key_value_heads !== undefined ? ` (${c.num_key_value_heads} KV)` : ''}` : '',
    c.experts !== undefined ? `${c.experts} experts${c.num_experts_per_tok !== undefined ? `, ${c.num_experts_per_tok} per token` : ''}` : 'dense',
  ].filter(Boolean);
  return `${c.model_type ?? 'model'}${c.nested ? ` (under ${c.nested})` : ''}: ${facts.join(', ')} — ${c.path}, found by ${c.found_by}`;
}

/** The links NCCL would take to other hosts: RDMA ports first (its default when present), else the socket interfaces. */
export function networkLine(r: ProbeResult): string | undefined {
  const n = r.network;
  if (!n) return undefined;
  const rdma = n.rdma.map((p) => `${p.device}:${p.port} ${p.state ?? '?'}${p.rate ? ` ${p.rate}` : ''}${p.link_layer ? ` (${p.link_layer})` : ''}`);
  const sockets = n.interfaces
    .filter((i) => i.nccl_default && i.state === 'up')
    .map((i) => `${i.name}${i.speed_mbps ? ` ${i.speed_mbps >= 1000 ? `${i.speed_mbps / 1000} Gb/s` : `${i.speed_mbps} Mb/s`}` : ''}`);
  const env = Object.entries(n.env).map(([k, v]) => `${k}=${v}`);
  return `Network: ${rdma.length ? `RDMA ${rdma.join(', ')}` : 'no RDMA device (NCCL uses sockets between hosts)'}; interfaces up: ${sockets.join(', ') || 'none'}${env.length ? `; ${env.join(' ')}` : ''}`;
}

function fmtGiB(v: number | null): string {
  return v === null ? '?' : (v / 1024).toFixed(1);
}

/** The environment as one table of facts (Python, packages, the server, its command line), for the results view. */
export function environmentTable(r: ProbeResult): ResultTable {
  const s = r.server;
  const p = s.profiler;
  const rows: [string, string | undefined][] = [
    ['Host', r.host],
    ['Python', `${r.python.version} (${r.python.executable})`],
    ...Object.entries(r.packages).map(([name, v]): [string, string] => [name, v ?? 'not installed']),
    ['Server', s.reachable ? `${serverName(r)} at ${s.url}${s.healthy === false ? ' (health check failed)' : ''}` : (s.error ?? `nothing answers at ${s.url}`)],
    ['API key', apiKeyState(s)],
    ['Models', s.models.map((m) => `${m.id}${m.max_model_len ? ` (max_model_len ${m.max_model_len})` : ''}`).join(', ') || undefined],
    [
      'Profiler',
      s.reachable
        ? `${p.enabled === true ? (p.kind === 'cuda' ? 'CUDA profiler (no torch traces)' : 'enabled') : p.enabled === false ? 'not enabled' : 'unknown'}${p.evidence ? ` (${p.evidence})` : ''}`
        : undefined,
    ],
    ['Model structure', modelConfigText(s)],
    ['Parallel', s.parallel ? `tp ${s.parallel.tp} × pp ${s.parallel.pp} × dp ${s.parallel.dp}: ${s.parallel.ranks} rank(s) write traces` : undefined],
    ['Command line', s.command_line ? `${s.command_line.join(' ')} (pid ${s.pid})` : undefined],
    ['GPUs', r.gpus.available ? undefined : (r.gpus.error ?? 'none seen')],
    ['Network', networkLine(r)?.replace(/^Network: /, '')],
  ];
  return {
    id: 'probe-environment',
    title: 'Environment',
    columns: [
      { key: 'what', label: 'What', align: 'left' },
      { key: 'value', label: 'Found', align: 'left' },
    ],
    rows: rows.filter(([, v]) => v !== undefined && v !== '').map(([what, value]) => ({ what, value: value! })),
  };
}

/** What the results view draws for a probe run. */
export function probeView(r: ProbeResult): ProbeView {
  return { tables: [environmentTable(r), ...(r.gpus.devices.length ? [gpuTable(r)] : [])] };
}
