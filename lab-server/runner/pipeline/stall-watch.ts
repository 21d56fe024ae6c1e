/**
 * Stalls are findings. Watches a pipeline grade for stretches in which input is waiting, nothing
 * holds the program back (no broker downtime, no paused or frozen instance, no rebalance or
 * restart still within the group's session and rebalance timeouts) and yet nothing moves: no
 * offsets, no output. A program wedged by its own error handling (a failed send whose transaction
 * is never aborted, after which every producer.transaction() throws) looks exactly like that, and
 * the faults after it would otherwise land on an idle process and hide it. The keeps-up checker
 * judges what this records (checkers/keeps-up.ts); the longest stretch is reported either way.
 */
import type { ChildEvent } from '../program/child/protocol.ts';

/** What the watch asks the grade on every poll. */
export interface StallSource {
  /** Milliseconds since the attempt started. */
  elapsed(): number;
  /** Committed inputs written and not yet accounted for by the program. */
  waiting(): number;
  /**
   * When the program last made progress the broker shows: offsets committed, a start, and for a
   * program without our wrapper its output moving. (For a wrapped program output alone is not
   * progress: a loop of aborted transactions moves it too; its commits are, see noteEvent.)
   */
  lastActivityAt(): number;
  /** A reason the program may not progress right now that is not its own doing, or null. */
  holdReason(): string | null;
}

export interface Stall {
  fromMs: number;
  toMs: number;
  waiting: number;
  /** Each instance's last instrumented call before the stall, and its last lines of output. */
  lastCalls: string[];
  lastLines: string[];
}

const LINES_KEPT = 3;
/**
 * Crash points a wrapped program reaches only when a commit succeeded. (The program could forge
 * them over its channel; that would only hide a stall from keeps-up, never a duplicate or a loss.)
 */
const COMMIT_POINTS = new Set<string>(['after:commit', 'after:commitOffsets', 'after:db-commit']);

export class StallWatch {
  readonly stalls: Stall[] = [];
  /** Longest unheld stretch without progress while input waited (ms), below the bound or not. */
  longestMs = 0;
  /** When that stretch ended (or was last seen going on), ms since the attempt started. */
  longestEndMs = 0;
  private since = Date.now();
  private open: Stall | null = null;
  private readonly lastCall = new Map<string, string>();
  private readonly lines = new Map<string, string[]>();

  constructor(
    private readonly src: StallSource,
    /** A stretch longer than this is a stall (chosen from measurements, see the keeps-up check). */
    readonly boundMs: number,
  ) {}

  /** When a wrapped program last reported a commit that succeeded (a transaction, offsets, a database). */
  private lastCommitAt = 0;

  /** An instrumented call (or failure) of an instance: a commit is progress; the rest is evidence. */
  noteEvent(instance: string, event: ChildEvent): void {
    if (event.t === 'call' && COMMIT_POINTS.has(event.point)) this.lastCommitAt = Date.now();
    const at = `+${(this.src.elapsed() / 1000).toFixed(1)} s`;
    if (event.t === 'call') this.lastCall.set(instance, `${instance} last reached ${event.point} at ${at}${event.txnOpen ? ' (transaction open)' : ''}`);
    else if (event.t === 'failed') this.lastCall.set(instance, `${instance}'s last call, ${event.op}, failed at ${at}: ${event.error.slice(0, 160)}${event.txnOpen ? ' (its transaction is still open)' : ''}`);
  }

  noteLine(instance: string, line: string): void {
    const kept = this.lines.get(instance) ?? [];
    kept.push(line.length > 200 ? `${line.slice(0, 200)}…` : line);
    if (kept.length > LINES_KEPT) kept.shift();
    this.lines.set(instance, kept);
  }

  /** How long the current unheld stretch without progress has lasted, or null if there is none. */
  developingMs(): number | null {
    if (this.src.waiting() <= 0 || this.src.holdReason()) return null;
    return Date.now() - this.lastProgressAt();
  }

  /** Called on every progress poll while the program runs under the plan. */
  poll(): void {
    const now = Date.now();
    const waiting = this.src.waiting();
    const held = this.src.holdReason();
    if (waiting <= 0 || held) {
      this.close();
      this.since = now;
      return;
    }
    const since = this.lastProgressAt();
    if (since > (this.open ? this.openedAt : -Infinity)) this.close();
    const quietMs = now - since;
    if (quietMs >= this.longestMs) {
      this.longestMs = quietMs;
      this.longestEndMs = this.src.elapsed();
    }
    if (quietMs <= this.boundMs) return;
    if (!this.open) {
      this.openedAt = since;
      this.open = {
        fromMs: this.src.elapsed() - quietMs,
        toMs: this.src.elapsed(),
        waiting,
        lastCalls: [...this.lastCall.values()],
        lastLines: [...this.lines].flatMap(([instance, lines]) => lines.map((l) => `${instance}: ${l}`)),
      };
      this.stalls.push(this.open);
    }
    this.open.toMs = this.src.elapsed();
    this.open.waiting = waiting;
  }

  private openedAt = 0;

  private lastProgressAt(): number {
    return Math.max(this.since, this.src.lastActivityAt(), this.lastCommitAt);
  }

  private close(): void {
    this.open = null;
  }
}
