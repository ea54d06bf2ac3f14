// The fuzz layer's account: each sweep counts its cases and how each ended, and prints one line that the
// suite's log keeps ("fuzz traces: 905 cases, 0 crash, 0 hang, 0 silent-wrong"), so a round's size and
// outcome read off CI without opening a test.
export type Outcome = 'ok' | 'crash' | 'hang' | 'silent-wrong';

export class FuzzTally {
  private readonly counts: Record<Outcome, number> = { ok: 0, crash: 0, hang: 0, 'silent-wrong': 0 };
  readonly problems: string[] = [];

  constructor(readonly sweep: string) {}

  record(outcome: Outcome, what = ''): void {
    this.counts[outcome] += 1;
    if (outcome !== 'ok') this.problems.push(`${outcome}: ${what}`);
  }

  get cases(): number {
    return Object.values(this.counts).reduce((a, b) => a + b, 0);
  }

  line(): string {
    const c = this.counts;
    return `fuzz ${this.sweep}: ${this.cases} cases, ${c.crash} crash, ${c.hang} hang, ${c['silent-wrong']} silent-wrong`;
  }

  print(): void {
    console.log(`      ${this.line()}`);
  }
}
