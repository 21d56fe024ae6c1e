/**
 * Per-learner quotas. A learner is known by their address (clientIp: the peer, or the proxy's
 * X-Forwarded-For entry with KAFKAIQ_TRUST_PROXY=1): a session id is free to mint, an address is
 * not. Per address the server bounds open WebSockets (ConnectionsPerIp, admission.ts), runs and
 * grades at once (here, a grade counting from the moment it queues), and display-name changes
 * (KeyedRate). Each session id additionally has one socket (the newest tab wins) and one activity.
 */
import { KafkaIqError } from '../../src/shared/errors.ts';

export type Activity = 'run' | 'grade';

export interface LearnerLimits {
  runs: number;
  grades: number;
}

export class LearnerQuotas {
  /** learner -> activity -> count; an entry goes when its counts reach zero, so this stays bounded by open sockets. */
  private readonly held = new Map<string, Record<Activity, number>>();

  constructor(private readonly limits: LearnerLimits) {}

  /**
   * Takes one slot of `activity` for the learner, or throws LIMIT_EXCEEDED naming the limit.
   * Returns the release (safe to call more than once).
   */
  take(learner: string, activity: Activity): () => void {
    const counts = this.held.get(learner) ?? { run: 0, grade: 0 };
    const max = activity === 'run' ? this.limits.runs : this.limits.grades;
    if (counts[activity] >= max) {
      const what = activity === 'run' ? 'runs' : 'grades (running or waiting)';
      throw new KafkaIqError('LIMIT_EXCEEDED', `You already have ${max} ${what} from this address, the most one learner may have at once: stop one (or wait for it) first.`);
    }
    counts[activity]++;
    this.held.set(learner, counts);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      counts[activity]--;
      if (counts.run === 0 && counts.grade === 0 && this.held.get(learner) === counts) this.held.delete(learner);
    };
  }

  /** What a learner holds now (for tests and logs). */
  holding(learner: string): Record<Activity, number> {
    return { ...(this.held.get(learner) ?? { run: 0, grade: 0 }) };
  }
}

/**
 * A token bucket per key (a session id, an address) for rare actions such as a display-name
 * change. Bounded: past `maxKeys` the oldest key is forgotten (it only regains its budget).
 */
export class KeyedRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly burst: number,
    private readonly perMinute: number,
    private readonly maxKeys = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes a token; returns 0 when allowed, else the seconds until one is back. */
  take(key: string): number {
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 60_000) * this.perMinute);
    bucket.at = now;
    // Re-inserted so the map's order is least recently used first.
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    if (bucket.tokens < 1) return Math.ceil(((1 - bucket.tokens) * 60) / this.perMinute);
    bucket.tokens -= 1;
    return 0;
  }
}
