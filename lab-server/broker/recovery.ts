/**
 * What the broker supervisor (broker-process.ts) does about a broker that cannot stay up because
 * of its own data: its log holds something that kills it at every start (the coordinator reloading
 * a heap's worth of transactional ids from __transaction_state, a corrupted metadata log), so
 * restarting it again only loops. The rule, by construction rather than by cause:
 *
 *  - a FAILED START is a start that does not reach "ready" (the JVM exits, or it never answers),
 *    or a node that exits on its own within CRASH_LOOP.windowMs of becoming ready;
 *  - a node that stayed up longer than that window starts the count afresh;
 *  - after CRASH_LOOP.failedStarts failed starts in a row, the state is taken as poisoned: every
 *    node is stopped, each node's log directory and the cluster id are MOVED (never deleted) to
 *    <data dir>/quarantine/<time>/, the nodes are formatted afresh with a new cluster id and
 *    started. The newest CRASH_LOOP.quarantinesKept quarantines are kept for inspection, older
 *    ones deleted, so a broker poisoned again and again cannot fill the disk.
 *
 * A fresh broker has no topics, ACLs or transactions: grades in flight fail, and every attempt
 * started afterwards grants and creates its own as usual. What is lost is only the teaching
 * broker's scratch state.
 */
import fs from 'node:fs';
import path from 'node:path';
import { answersWithin, HEALTH_DEADLINE_MS } from './probes.ts';

export const CRASH_LOOP = {
  failedStarts: 3,
  windowMs: 120_000,
  quarantinesKept: 2,
};

/** Counts failed starts in a row (see the file comment); one per supervised broker. */
export class CrashLoop {
  private failures = 0;
  private readyAt = 0;

  constructor(
    private readonly limit = CRASH_LOOP.failedStarts,
    private readonly windowMs = CRASH_LOOP.windowMs,
    private readonly now: () => number = Date.now,
  ) {}

  /** Every node answered: the start succeeded. */
  ready(): void {
    this.readyAt = this.now();
  }

  /** A start never reached ready. */
  startFailed(): void {
    this.failures++;
    this.readyAt = 0;
  }

  /** A node exited on its own: a failed start if it had not yet been up for the window. */
  exited(): void {
    const survived = this.readyAt > 0 && this.now() - this.readyAt >= this.windowMs;
    this.failures = survived ? 0 : this.failures + 1;
    this.readyAt = 0;
  }

  get failedStarts(): number {
    return this.failures;
  }

  get poisoned(): boolean {
    return this.failures >= this.limit;
  }

  reset(): void {
    this.failures = 0;
  }
}

/**
 * Moves the given entries of the data dir (node log dirs, the cluster-id file) into a new
 * quarantine folder and prunes the older quarantines. Returns the folder. Synchronous: it runs
 * while every node is stopped, and nothing may format in between.
 */
export function quarantine(dataDir: string, entries: readonly string[], kept = CRASH_LOOP.quarantinesKept, now = new Date()): string {
  const root = path.join(dataDir, 'quarantine');
  const target = path.join(root, now.toISOString().replace(/[:.]/g, '-'));
  fs.mkdirSync(target, { recursive: true });
  for (const entry of entries) {
    const from = path.join(dataDir, entry);
    if (fs.existsSync(from)) fs.renameSync(from, path.join(target, entry));
  }
  // ISO times sort as text: the newest last.
  const all = fs.readdirSync(root).sort();
  for (const old of all.slice(0, Math.max(0, all.length - kept))) fs.rmSync(path.join(root, old), { recursive: true, force: true });
  return target;
}

/**
 * The other way a broker fails while its process lives: it stops answering (a heap nearly full,
 * a stuck thread) while its port still accepts. Every `everyMs` the watchdog sends each watched
 * node a metadata request with a deadline: no answer is reported at once (the health badge says
 * down), and a node that has answered nothing for `killAfterMs` is reported wedged (the supervisor
 * kills it, and its exit goes through the crash-loop rule above).
 */
export interface WatchdogOptions {
  everyMs: number;
  deadlineMs: number;
  killAfterMs: number;
}

export const WATCHDOG: WatchdogOptions = { everyMs: 5_000, deadlineMs: HEALTH_DEADLINE_MS, killAfterMs: 60_000 };

export interface WatchdogTarget {
  /** The nodes to probe now: none while the supervisor is starting or restarting them. */
  watched(): { nodeId: number; port: number }[];
  down(nodeId: number, reason: string): void;
  up(nodeId: number): void;
  wedged(nodeId: number, silentMs: number): void;
}

export class Watchdog {
  private readonly silentSince = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(
    private readonly target: WatchdogTarget,
    private readonly options: WatchdogOptions = WATCHDOG,
  ) {}

  arm(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.options.everyMs);
    this.timer.unref();
  }

  disarm(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.silentSince.clear();
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const watched = this.target.watched();
      for (const id of [...this.silentSince.keys()]) if (!watched.some((n) => n.nodeId === id)) this.silentSince.delete(id);
      for (const node of watched) {
        const answer = await answersWithin(`127.0.0.1:${node.port}`, this.options.deadlineMs);
        // The supervisor may have begun a restart meanwhile: judge only nodes still watched.
        if (!this.timer || !this.target.watched().some((n) => n.nodeId === node.nodeId)) {
          this.silentSince.delete(node.nodeId);
          continue;
        }
        if (answer.ok) {
          if (this.silentSince.delete(node.nodeId)) this.target.up(node.nodeId);
          continue;
        }
        const since = this.silentSince.get(node.nodeId) ?? Date.now() - this.options.deadlineMs;
        if (!this.silentSince.has(node.nodeId)) {
          this.silentSince.set(node.nodeId, since);
          this.target.down(node.nodeId, answer.reason);
        }
        if (Date.now() - since >= this.options.killAfterMs) {
          // Told once: until the node is gone from the watched list, it is neither down again nor killed again.
          this.silentSince.set(node.nodeId, Infinity);
          this.target.wedged(node.nodeId, Date.now() - since);
        }
      }
    } finally {
      this.busy = false;
    }
  }
}
