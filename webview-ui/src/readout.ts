// The line under a timeline that says what is at the pointer (or which step was picked). It reads one
// run: when the card is given another run, a reading of the previous one would describe bars no longer
// drawn, so it goes and the hint comes back.

/** What the readout writes into: an element's text, or its children (a picked step's tables). */
export interface ReadoutTarget {
  replaceChildren(...nodes: (Node | string)[]): void;
}

export class RunReadout {
  private shownFor: string;

  constructor(
    private readonly target: ReadoutTarget,
    private readonly hint: () => Node | string,
    runId: string,
  ) {
    this.shownFor = runId;
    target.replaceChildren(hint());
  }

  /** What is at the pointer now, in the run the card shows. */
  show(...content: (Node | string)[]): void {
    this.target.replaceChildren(...content);
  }

  /** The card now shows `runId`: a reading of another run is cleared back to the hint. Returns whether it was. */
  follow(runId: string): boolean {
    if (runId === this.shownFor) return false;
    this.shownFor = runId;
    this.target.replaceChildren(this.hint());
    return true;
  }
}
