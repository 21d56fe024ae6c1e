/**
 * The WebSocket as a public endpoint: who may connect, how much each may send, and how many
 * grades run at once. Allow-list and bounded everywhere:
 *  - Host and Origin: the configured origins only (perimeter.ts); a request without Origin is
 *    refused unless the operator opts in (a non-browser client on a private server);
 *  - per IP: a cap on open connections; per learner (address): runs and grades (learner-quotas.ts);
 *  - per connection: a token bucket of messages;
 *  - the whole server: a cap on concurrent grades, the rest wait in a bounded FIFO queue whose
 *    position each waiting learner is told.
 */
import type http from 'node:http';
import { availableParallelism } from 'node:os';
import { KafkaIqError } from '../../src/shared/errors.ts';

export interface AdmissionLimits {
  /** Open WebSockets per client IP. */
  connectionsPerIp: number;
  /** Sustained messages per second per connection, and the burst allowed above it. */
  messagesPerSecond: number;
  messageBurst: number;
  /** Grades running at once on this server; the others queue. */
  concurrentGrades: number;
  /** Grades waiting at most; one more is refused (BUSY). */
  gradeQueue: number;
  /** Runs one learner (address) may have at once. */
  runsPerLearner: number;
  /** Grades one learner (address) may have running or waiting at once. */
  gradesPerLearner: number;
}

/**
 * The fixed limits, and concurrentGrades for a 2-core lab server (see defaultLimits). A full grade
 * costs about 10 core-seconds over 13-20 s of wall time, half a core on average: two grades per
 * core keep the cores busy without stretching a grade's waits past its bounds.
 */
export const DEFAULT_LIMITS: AdmissionLimits = {
  connectionsPerIp: 8,
  messagesPerSecond: 20,
  messageBurst: 60,
  concurrentGrades: 4,
  gradeQueue: 100,
  runsPerLearner: 3,
  gradesPerLearner: 2,
};

/** Grades at once per core of the machine (DEFAULT_LIMITS says why two). */
export const GRADES_PER_CORE = 2;

/** The defaults for a machine of `cores` cores: concurrent grades follow the cores, the rest is fixed. */
export function defaultLimits(cores: number = availableParallelism()): AdmissionLimits {
  return { ...DEFAULT_LIMITS, concurrentGrades: Math.max(GRADES_PER_CORE, GRADES_PER_CORE * Math.floor(cores)) };
}

/** KAFKAIQ_MAX_GRADES etc. override the defaults (checked: a typo must not lift a limit). */
export function limitsFromEnv(env: NodeJS.ProcessEnv = process.env, cores: number = availableParallelism()): AdmissionLimits {
  const defaults = defaultLimits(cores);
  const read = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1 || value > 10_000) throw new KafkaIqError('INVALID_INPUT', `${name} must be a whole number from 1 to 10000, got "${raw}".`);
    return value;
  };
  return {
    connectionsPerIp: read('KAFKAIQ_CONNECTIONS_PER_IP', defaults.connectionsPerIp),
    messagesPerSecond: read('KAFKAIQ_MESSAGES_PER_SECOND', defaults.messagesPerSecond),
    messageBurst: read('KAFKAIQ_MESSAGE_BURST', defaults.messageBurst),
    concurrentGrades: read('KAFKAIQ_MAX_GRADES', defaults.concurrentGrades),
    gradeQueue: read('KAFKAIQ_GRADE_QUEUE', defaults.gradeQueue),
    runsPerLearner: read('KAFKAIQ_RUNS_PER_LEARNER', defaults.runsPerLearner),
    gradesPerLearner: read('KAFKAIQ_GRADES_PER_LEARNER', defaults.gradesPerLearner),
  };
}

/** Open connections per IP. */
export class ConnectionsPerIp {
  private readonly open = new Map<string, number>();
  constructor(private readonly max: number) {}

  /** Counts the connection in, or returns false when the IP has its maximum open. */
  admit(ip: string): boolean {
    const n = this.open.get(ip) ?? 0;
    if (n >= this.max) return false;
    this.open.set(ip, n + 1);
    return true;
  }

  release(ip: string): void {
    const n = (this.open.get(ip) ?? 1) - 1;
    if (n <= 0) this.open.delete(ip);
    else this.open.set(ip, n);
  }
}

/** A token bucket: `perSecond` sustained, `burst` at most at once. */
export class MessageRate {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

interface Waiter {
  admit: () => void;
  onPosition: (position: number) => void;
}

/** At most `max` grades at once; the others wait, first come first served, and hear their place. */
export class GradeQueue {
  private running = 0;
  private readonly waiting: Waiter[] = [];
  constructor(
    private readonly max: number,
    private readonly maxWaiting: number,
  ) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Resolves with a release function once a slot is free. onPosition(n) is called with the place
   * in the queue (1 = next) whenever it changes, and onPosition(0) when the grade starts. A caller
   * that gives up (its learner left) calls the returned cancel.
   */
  acquire(onPosition: (position: number) => void): { admitted: Promise<() => void>; cancel: () => void } {
    if (this.running < this.max && this.waiting.length === 0) {
      this.running++;
      return { admitted: Promise.resolve(this.releaser()), cancel: () => {} };
    }
    if (this.waiting.length >= this.maxWaiting) {
      throw new KafkaIqError('BUSY', `The lab server is grading at capacity and ${this.waiting.length} grades are waiting: try again in a few minutes.`);
    }
    let waiter!: Waiter;
    let leave!: () => void;
    const admitted = new Promise<() => void>((resolve) => {
      waiter = { admit: () => resolve(this.releaser()), onPosition };
      // Leaving the queue resolves too, with nothing to release: the caller sees it gave up.
      leave = () => resolve(() => {});
    });
    this.waiting.push(waiter);
    onPosition(this.waiting.length);
    return {
      admitted,
      cancel: () => {
        const i = this.waiting.indexOf(waiter);
        if (i < 0) return;
        this.waiting.splice(i, 1);
        leave();
        this.announce();
      },
    };
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const next = this.waiting.shift();
      if (next) {
        this.running++;
        next.onPosition(0);
        next.admit();
        this.announce();
      }
    };
  }

  private announce(): void {
    this.waiting.forEach((w, i) => w.onPosition(i + 1));
  }
}

/**
 * The peer's address, for the per-IP cap. Behind a reverse proxy every peer is the proxy: with
 * KAFKAIQ_TRUST_PROXY=1 the last address the proxy appended to X-Forwarded-For counts instead
 * (never the first, which the client writes itself).
 */
export function clientIp(req: http.IncomingMessage, env: NodeJS.ProcessEnv = process.env): string {
  const forwarded = req.headers['x-forwarded-for'];
  if (env.KAFKAIQ_TRUST_PROXY === '1' && typeof forwarded === 'string') {
    const last = forwarded.split(',').map((s) => s.trim()).filter(Boolean).pop();
    if (last) return last;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** Manual broker restarts disrupt every grade on the cluster: only a private, single-user server offers them. */
export function singleUserLoopback(host: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const loopback = host === '127.0.0.1' || host === 'localhost' || host === '::1';
  return loopback && env.KAFKAIQ_MULTI_USER !== '1';
}
