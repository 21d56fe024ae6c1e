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

/** Where a grade's time went, by kind of stretch: the faults summed per kind (`fault 3: kill` counts as `faults: kill`). */
export function phaseTotals(phases: readonly PhaseSpan[]): Map<string, number> {
  const totals = new Map<string, number>();
  for (const { name, ms } of phases) {
    const key = name.replace(/^fault \d+: ([\w-]+).*$/, 'faults: $1');
    totals.set(key, (totals.get(key) ?? 0) + ms);
  }
  return totals;
}
