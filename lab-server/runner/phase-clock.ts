/**
 * Where a grade's time goes: consecutive named stretches (compile, prepare, each fault from arming
 * to the program catching up, settle, stopping, the wait for abandoned transactions, verify),
 * reported in the grade's stats so a bench can take medians per stretch.
 */
export interface PhaseSpan {
  name: string;
  ms: number;
}

export class PhaseClock {
  private readonly spans: PhaseSpan[] = [];
  private current: { name: string; since: number } | null = null;

  /** Ends the stretch under way (if any) and starts `name`. */
  enter(name: string, now = Date.now()): void {
    this.end(now);
    this.current = { name, since: now };
  }

  /** Ends the stretch under way. */
  end(now = Date.now()): void {
    if (this.current) this.spans.push({ name: this.current.name, ms: now - this.current.since });
    this.current = null;
  }

  /** The stretches so far, the one under way included (up to now), in order. */
  list(now = Date.now()): PhaseSpan[] {
    return this.current ? [...this.spans, { name: this.current.name, ms: now - this.current.since }] : [...this.spans];
  }
}
