// Where a run's timeline goes: a macro run's requests, or a profile run's steps, updated in place so that
// a live run keeps the user's zoom.
import type { RunSummary } from '../../../src/shared/results';
import { StepTimelineCard } from '../stepTimelineCard';
import { TimelineCard } from '../timelineCard';
import { stepTimelineData, timelineData } from '../views/timeline';

export class TimelineSlot {
  private timeline: TimelineCard | undefined;
  private stepTimeline: StepTimelineCard | undefined;

  constructor(private readonly holder: HTMLElement) {}

  render(run: RunSummary | undefined): void {
    const started = performance.now();
    const data = run ? timelineData(run) : undefined;
    const steps = run && !data ? stepTimelineData(run) : undefined;
    if (data) {
      if (this.timeline) this.timeline.update(data);
      else this.timeline = new TimelineCard(data);
    } else {
      this.timeline?.destroy();
      this.timeline = undefined;
    }
    if (steps) {
      if (this.stepTimeline) this.stepTimeline.update(steps);
      else this.stepTimeline = new StepTimelineCard(steps);
    } else {
      this.stepTimeline?.destroy();
      this.stepTimeline = undefined;
    }
    const shown = this.timeline?.element ?? this.stepTimeline?.element;
    if (shown) {
      if (this.holder.firstElementChild !== shown) this.holder.replaceChildren(shown);
    } else this.holder.replaceChildren();
    // What the timeline's part of a render cost (its shaping and drawing), for the benchmark.
    document.body.dataset.timelineMs = (performance.now() - started).toFixed(2);
  }

  retheme(): void {
    this.timeline?.retheme();
    this.stepTimeline?.retheme();
  }
}
