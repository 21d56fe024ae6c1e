/**
 * The attempt's history, as Jepsen keeps one: an append-only log of the faults injected and of the
 * timeline events (starts, exits, commits, waves). Checkers and the report read it; nobody edits it.
 */
import type { FaultRecord, TimelineEvent } from '../../src/shared/report.ts';

/** Timeline events kept per attempt; a program that commits in a tight loop cannot grow the report without end. */
export const MAX_TIMELINE_EVENTS = 5_000;

export class History {
  /** Timeline events not kept (past MAX_TIMELINE_EVENTS). */
  droppedEvents = 0;
  private readonly faultLog: FaultRecord[] = [];
  private readonly events: TimelineEvent[] = [];

  /** @param clock milliseconds since the attempt started */
  constructor(private readonly clock: () => number) {}

  get faults(): readonly FaultRecord[] {
    return this.faultLog;
  }

  get timeline(): readonly TimelineEvent[] {
    return this.events;
  }

  mark(kind: TimelineEvent['kind'], instance: string, detail?: string): void {
    // Faults are always kept (the plan bounds them); other events up to the cap, then counted.
    if (this.events.length >= MAX_TIMELINE_EVENTS && kind !== 'fault') {
      this.droppedEvents++;
      return;
    }
    if (detail && detail.length > 500) detail = `${detail.slice(0, 500)} …`;
    this.events.push({ atMs: this.clock(), kind, instance, ...(detail ? { detail } : {}) });
  }

  /** Appends a fault; returns how many faults the log holds now. */
  fault(record: FaultRecord): number {
    this.faultLog.push(record);
    return this.faultLog.length;
  }
}
