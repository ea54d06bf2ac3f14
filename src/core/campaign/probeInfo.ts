import { ProbeInfo } from '../findings/skeleton';
import { ProbeResult, serverName } from '../phases/probe';

/** The findings document's header lines from what the probe found. */
export function probeInfoFrom(result: ProbeResult, target: string): ProbeInfo {
  const gpus = result.gpus.devices;
  const gib = (mib: number | null) => (mib === null ? '' : ` ${Math.round(mib / 1024)} GiB`);
  const hardware = gpus.length
    ? `${gpus.length}× ${gpus[0].name}${gib(gpus[0].memory_total_mib)}, driver ${gpus[0].driver_version}`
    : `no GPU seen on ${result.host} (${result.gpus.error ?? 'nvidia-smi found nothing'})`;
  const model = result.server.models[0]?.id ?? undefined;
  const server = result.server.reachable ? `${serverName(result)} at ${result.server.url}` : `not answering at ${result.server.url}`;
  return { target, hardware, model: model ?? undefined, server };
}
