// The server's progress as one line a user reads, the same in the CLI and in VS Code's output channel.
import type { ServerProgress } from './serverChange';

/**
 * "ready after 7.6 s (pid 736)", "stopping: SIGTERM to pid 736 (0.4 s)": the stage where the message does
 * not already start with it, the time where the message does not already say it (each said once), and the
 * last start's time to compare with.
 */
export function serverProgressText(p: ServerProgress): string {
  const stage = p.stage?.replace(/_/g, ' ');
  const message = p.message.trim();
  const prefix = stage && !message.toLowerCase().startsWith(stage.toLowerCase()) ? `${stage}: ` : '';
  const elapsed = p.elapsedS !== undefined ? `${p.elapsedS.toFixed(1)} s` : undefined;
  const saysElapsed = elapsed !== undefined && message.includes(elapsed);
  const last = p.estimateS ? `about ${Math.round(p.estimateS)} s last time` : undefined;
  const time = elapsed && !saysElapsed ? ` (${elapsed}${last ? ` of ${last}` : ''})` : elapsed && last ? ` (${last})` : '';
  return `${prefix}${message}${time}`;
}
