// A zoomable time axis for the canvas timelines (the run's requests, the profiled steps): the span
// shown, the mouse wheel, a drag, the keys and the Zoom buttons that change it, and the ticks drawn
// under the plot. The card that owns it redraws when the span changes.
import { button } from './dom';

/** The plot's left edge and right margin in CSS pixels (labels go left of it). */
export const PLOT_LEFT = 92;
export const PLOT_RIGHT = 14;

function niceStep(span: number, ticks: number): number {
  const raw = span / Math.max(1, ticks);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

export class TimeAxis {
  /** The span shown; undefined shows all of [min, max]. */
  private view: [number, number] | undefined;
  private drag: { x: number; view: [number, number]; moved: boolean } | undefined;
  /** Plot width in CSS pixels, set by the owner at each draw. */
  width = 1;

  constructor(
    private min: number,
    private max: number,
    private readonly redraw: () => void,
    /** The smallest span a zoom goes to. */
    private readonly minSpan: number,
  ) {}

  /** New bounds (a run that grew); the zoom stays unless `reset`. */
  setBounds(min: number, max: number, reset: boolean): void {
    this.min = min;
    this.max = max > min ? max : min + this.minSpan;
    if (reset) this.view = undefined;
  }

  shown(): [number, number] {
    return this.view ?? [this.min, this.max];
  }

  get zoomed(): boolean {
    return !!this.view;
  }

  /** The x pixel (CSS) of time `t`. */
  x(t: number): number {
    const [a, b] = this.shown();
    return PLOT_LEFT + ((t - a) / (b - a)) * this.width;
  }

  timeAt(px: number): number {
    const [a, b] = this.shown();
    return a + ((px - PLOT_LEFT) / this.width) * (b - a);
  }

  /** Zooms by `factor` (below 1 in, above 1 out) about time `at` (the middle by default). */
  zoom(factor: number, at?: number): void {
    const [a, b] = this.shown();
    const centre = at ?? (a + b) / 2;
    this.set([centre - (centre - a) * factor, centre + (b - centre) * factor]);
  }

  set(view: [number, number] | undefined): void {
    if (view) {
      let [a, b] = view;
      if (b - a < this.minSpan) [a, b] = [(a + b - this.minSpan) / 2, (a + b + this.minSpan) / 2];
      if (b - a >= this.max - this.min) view = undefined;
      else {
        if (a < this.min) [a, b] = [this.min, this.min + (b - a)];
        if (b > this.max) [a, b] = [this.max - (b - a), this.max];
        view = [a, b];
      }
    }
    this.view = view;
    this.redraw();
  }

  /** Zoom in, Zoom out and Reset zoom, for the card's header. */
  buttons(): HTMLButtonElement[] {
    return [
      button('Zoom in', 'Zoom in on the middle (or turn the mouse wheel over the timeline)', () => this.zoom(0.5), 'zoom-in'),
      button('Zoom out', 'Zoom out', () => this.zoom(2), 'zoom-out'),
      button('Reset zoom', 'Show the whole span', () => this.set(undefined), 'screen-full'),
    ];
  }

  /**
   * Wheel zooms about the pointer, a drag pans, + - 0 and the arrows do the same from the keyboard;
   * `hover` gets the pointer when no drag is on, `click` a press released where it began.
   */
  attach(canvas: HTMLCanvasElement, hover: (x: number, y: number) => void, click?: (x: number, y: number) => void): void {
    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.zoom(Math.exp(e.deltaY * 0.002), this.timeAt(e.offsetX));
    });
    canvas.addEventListener('pointerdown', (e) => {
      this.drag = { x: e.offsetX, view: this.shown(), moved: false };
      canvas.setPointerCapture(e.pointerId);
    });
    canvas.addEventListener('pointerup', (e) => {
      if (this.drag && !this.drag.moved) click?.(e.offsetX, e.offsetY);
      this.drag = undefined;
    });
    canvas.addEventListener('pointercancel', () => (this.drag = undefined));
    canvas.addEventListener('pointermove', (e) => {
      if (!this.drag) return hover(e.offsetX, e.offsetY);
      if (Math.abs(e.offsetX - this.drag.x) < 3 && !this.drag.moved) return;
      this.drag.moved = true;
      const [a, b] = this.drag.view;
      const dt = ((this.drag.x - e.offsetX) / this.width) * (b - a);
      this.set([a + dt, b + dt]);
    });
    canvas.addEventListener('keydown', (e) => {
      if (e.key === '+' || e.key === '=') this.zoom(0.5);
      else if (e.key === '-') this.zoom(2);
      else if (e.key === '0') this.set(undefined);
      else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
        const [a, b] = this.shown();
        const dt = ((e.key === 'ArrowLeft' ? -1 : 1) * (b - a)) / 5;
        this.set([a + dt, b + dt]);
      } else return;
      e.preventDefault();
    });
  }

  /** Ticks and the axis's name along `y`. */
  drawTicks(ctx: CanvasRenderingContext2D, y: number, colours: { foreground: string; grid: string }, name: string): void {
    const [a, b] = this.shown();
    const step = niceStep(b - a, Math.max(2, Math.floor(this.width / 90)));
    ctx.fillStyle = colours.foreground;
    ctx.strokeStyle = colours.grid;
    ctx.textAlign = 'center';
    for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
      ctx.beginPath();
      ctx.moveTo(this.x(t), y - 4);
      ctx.lineTo(this.x(t), y);
      ctx.stroke();
      ctx.fillText(`${+t.toFixed(3)}`, this.x(t), y + 7);
    }
    ctx.textAlign = 'right';
    ctx.fillText(name, PLOT_LEFT + this.width, y + 19);
  }

  /** The span shown, for tests and the canvas's description: "a,b". */
  describe(): string {
    const [a, b] = this.shown();
    return `${a.toFixed(3)},${b.toFixed(3)}`;
  }
}
