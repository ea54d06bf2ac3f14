// The line under a timeline that says what is at the pointer (or which step was picked). It reads one
// run: when the card is given another run, a reading of the previous one would describe bars no longer
// drawn, so it goes and the hint comes back.

/** What the readout writes into: an element's text, or its children (a picked step's tables); `N` is the DOM's Node in the view. */
export interface ReadoutTarget<N> {
  replaceChildren(...nodes: (N | string)[]): void;
}

export class RunReadout<N> {
  private shownFor: string;

  constructor(
    private readonly target: ReadoutTarget<N>,
    private readonly hint: () => N | string,
    runId: string,
  ) {
    this.shownFor = runId;
    target.replaceChildren(hint());
  }

  /** What is at the pointer now, in the run the card shows. */
  show(...content: (N | string)[]): void {
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
