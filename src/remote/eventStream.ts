import { AgentEvent, asAgentEvent, foreignHello } from './agentProtocol';
import { cleanEventText } from '../shared/printable';

/**
 * Splits the agent's stdout into events. Copes with chunks that cut a line (or a UTF-8 character)
 * in half, and with stray output from libraries that print to stdout: a line that is not an event
 * is handed to `onNoise` instead of failing the run. Events come out with their text cleaned of control
 * characters (cleanEventText).
 */
export class AgentEventParser {
  private pending = '';
  private readonly decoder = new TextDecoder('utf-8');

  constructor(
    private readonly onEvent: (event: AgentEvent, rawLine: string) => void,
    private readonly onNoise: (line: string) => void = () => undefined,
    /** A `hello` of another schema version: the agent of another build answered. */
    private readonly onForeignHello: (hello: NonNullable<ReturnType<typeof foreignHello>>) => void = () => undefined,
  ) {}

  push(chunk: Buffer | string): void {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, newline).replace(/\r$/, '');
      this.pending = this.pending.slice(newline + 1);
      this.handleLine(line);
    }
  }

  /** Call when the stream ends: a last line without a newline still counts. */
  end(): void {
    this.pending += this.decoder.decode();
    if (this.pending.length > 0) this.handleLine(this.pending);
    this.pending = '';
  }

  private handleLine(line: string): void {
    if (line.trim() === '') return;
    if (line.startsWith('{')) {
      try {
        const value: unknown = JSON.parse(line);
        const event = asAgentEvent(value);
        if (event) {
          // Server text reaches every front end through here: cleaned of control characters once (the agent
          // cleans it too; an older agent may not).
          this.onEvent(cleanEventText(event), line);
          return;
        }
        const hello = foreignHello(value);
        if (hello) this.onForeignHello(hello);
      } catch {
        // fall through: a line that merely looks like JSON is noise
      }
    }
    this.onNoise(line);
  }
}
