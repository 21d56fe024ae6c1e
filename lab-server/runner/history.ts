/**
 * The attempt's history, as Jepsen keeps one: an append-only log of the faults injected and of the
 * timeline events (starts, exits, commits, waves). Checkers and the report read it; nobody edits it.
 */
import type { FaultRecord, TimelineEvent } from '../../src/shared/report.ts';

export class History {
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
    this.events.push({ atMs: this.clock(), kind, instance, ...(detail ? { detail } : {}) });
  }

  /** Appends a fault; returns how many faults the log holds now. */
  fault(record: FaultRecord): number {
    this.faultLog.push(record);
    return this.faultLog.length;
  }
}
