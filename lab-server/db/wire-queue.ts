/**
 * The one gate between many Postgres wire-protocol connections and PGlite's single backend.
 *
 * PGlite is one PostgreSQL session. @electric-sql/pglite-socket (0.2.17) frames the messages of
 * each TCP connection and hands them, one message at a time, to a queue in front of PGlite. Its
 * own queue keeps a connection's open BEGIN block exclusive, but between two messages of one
 * extended-protocol query (Parse, Bind, Describe, Execute ... Sync) another connection may run
 * whenever the messages arrive in separate reads, and the second one replaces the first one's
 * unnamed statement. Named prepared statements are shared by every connection too, so a restarted
 * program (or two clients of a pg.Pool) that prepares `{ name: 'insert-order' }` gets "prepared
 * statement already exists".
 *
 * This queue replaces pglite-socket's (PGLiteSocketHandler takes it as `queryQueue`) and fixes both:
 *  - a connection owns the backend from its first message until PGlite answers ReadyForQuery with
 *    status Idle, i.e. across a whole extended-protocol exchange and across a BEGIN ... COMMIT
 *    block; other connections' messages wait in order;
 *  - statement and portal names are prefixed per connection (k<id>_name), and a connection's
 *    prepared statements are deallocated when it goes away;
 *  - a connection that goes away while it owns the backend (a SIGKILLed program mid-transaction)
 *    has its exchange ended with a Sync and its transaction rolled back, so the next one starts clean.
 */
import type { PGlite } from '@electric-sql/pglite';
import { KafkaIqError } from '../../src/shared/errors.ts';

interface Job {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: Error) => void;
}

const TYPE = { parse: 0x50, bind: 0x42, describe: 0x44, close: 0x43, execute: 0x45, terminate: 0x58, ready: 0x5a } as const;
const IDLE = 0x49; // 'I'
const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]);

/** Finds the status byte of the last ReadyForQuery ('Z') in a stream of backend messages. */
export class ReadyScanner {
  /** 'I' idle, 'T' in a transaction block, 'E' in a failed one; null: no ReadyForQuery seen yet. */
  status: number | null = null;
  private readonly header = new Uint8Array(5);
  private headerLength = 0;
  private remaining = 0;

  feed(data: Uint8Array): void {
    let i = 0;
    while (i < data.length) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, data.length - i);
        // A ReadyForQuery body is its one status byte.
        if (this.header[0] === TYPE.ready) this.status = data[i + n - 1]!;
        this.remaining -= n;
        i += n;
        continue;
      }
      this.header[this.headerLength++] = data[i++]!;
      if (this.headerLength === 5) {
        this.headerLength = 0;
        const length = ((this.header[1]! << 24) | (this.header[2]! << 16) | (this.header[3]! << 8) | this.header[4]!) >>> 0;
        this.remaining = Math.max(0, length - 4);
      }
    }
  }
}

/** Reads the zero-terminated string at `offset`: [text, offset after its terminator]. */
function cstring(message: Uint8Array, offset: number): [string, number] {
  let end = offset;
  while (end < message.length && message[end] !== 0) end++;
  return [Buffer.from(message.subarray(offset, end)).toString('utf8'), end + 1];
}

/**
 * Prefixes the statement and portal names of one frontend message. `at`: offset of the first
 * name, `count`: how many names follow one another there. Unnamed ('') stays unnamed.
 */
function renamed(message: Uint8Array, at: number, count: number, prefix: string, seen?: (name: string) => void): Uint8Array {
  const parts: Buffer[] = [Buffer.from(message.subarray(0, at))];
  let offset = at;
  let changed = false;
  for (let n = 0; n < count; n++) {
    const [name, next] = cstring(message, offset);
    const out = name ? `${prefix}${name}` : '';
    if (name) {
      changed = true;
      seen?.(out);
    }
    parts.push(Buffer.from(`${out}\0`, 'utf8'));
    offset = next;
  }
  if (!changed) return message;
  parts.push(Buffer.from(message.subarray(offset)));
  const out = Buffer.concat(parts);
  out.writeInt32BE(out.length - 1, 1);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

export class ConnectionQueue {
  private readonly jobs: Job[] = [];
  /** Work of our own: cleanups after a connection closed. */
  private readonly tasks: { handlerId: number | null; run: () => Promise<void> }[] = [];
  private draining = false;
  /** The connection that has the backend (mid-exchange or in a transaction block), or null. */
  private owner: number | null = null;
  /** True while the owner is between the messages of one exchange (no ReadyForQuery yet). */
  private midExchange = false;
  /** Prepared statements (already prefixed) per connection, deallocated when it goes away. */
  private readonly statements = new Map<number, Set<string>>();

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.jobs.push({ handlerId, message, onData, resolve, reject });
      void this.drain();
    });
  }

  getQueueLength(): number {
    return this.jobs.length;
  }

  /** The connection closed: drop what it still had queued. */
  clearQueueForHandler(handlerId: number): void {
    for (let i = this.jobs.length - 1; i >= 0; i--) {
      const job = this.jobs[i]!;
      if (job.handlerId !== handlerId) continue;
      this.jobs.splice(i, 1);
      job.reject(new KafkaIqError('DATABASE_UNAVAILABLE', 'The connection to the embedded PostgreSQL closed before this query ran.'));
    }
  }

  /** The connection closed: end its exchange, roll back its transaction, forget its statements. */
  clearTransactionIfNeeded(handlerId: number): Promise<void> {
    return this.task(handlerId, () => this.cleanup(handlerId));
  }

  private task(handlerId: number | null, fn: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.tasks.push({ handlerId, run: () => fn().then(resolve, reject) });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (;;) {
        // Our own tasks run when nobody is mid-exchange or in a transaction block, or when the
        // connection that owns the backend is the one going away.
        const t = this.tasks.findIndex((x) => this.owner === null || this.owner === x.handlerId);
        if (t >= 0) {
          const [task] = this.tasks.splice(t, 1);
          await task!.run();
          continue;
        }
        const j = this.owner === null ? (this.jobs.length ? 0 : -1) : this.jobs.findIndex((x) => x.handlerId === this.owner);
        if (j < 0) break;
        const [job] = this.jobs.splice(j, 1);
        await this.execute(job!);
      }
    } finally {
      this.draining = false;
    }
  }

  private rewrite(handlerId: number, message: Uint8Array): Uint8Array {
    const prefix = `k${handlerId}_`;
    const remember = (name: string) => {
      let set = this.statements.get(handlerId);
      if (!set) this.statements.set(handlerId, (set = new Set()));
      set.add(name);
    };
    switch (message[0]) {
      case TYPE.parse:
        return renamed(message, 5, 1, prefix, remember);
      case TYPE.bind:
        return renamed(message, 5, 2, prefix); // portal, statement
      case TYPE.describe:
      case TYPE.close:
        return renamed(message, 6, 1, prefix); // after the 'S' / 'P' byte
      case TYPE.execute:
        return renamed(message, 5, 1, prefix); // portal
      default:
        return message;
    }
  }

  private async execute(job: Job): Promise<void> {
    // Terminate would end PGlite's one backend for everybody: the socket closes anyway.
    if (job.message[0] === TYPE.terminate && job.message.length === 5) {
      job.resolve(0);
      return;
    }
    const scanner = new ReadyScanner();
    let bytes = 0;
    try {
      const message = this.rewrite(job.handlerId, job.message);
      await this.db.runExclusive(() =>
        this.db.execProtocolRawStream(message, {
          onRawData: (data) => {
            bytes += data.length;
            scanner.feed(data);
            job.onData(data);
          },
        }),
      );
    } catch (err) {
      // PGlite itself failed (not an SQL error, which is an ErrorResponse): start afresh.
      this.owner = null;
      this.midExchange = false;
      job.reject(err as Error);
      return;
    }
    if (scanner.status === null) {
      // Mid-exchange (Parse without Sync yet, COPY in progress): nobody else until it ends.
      this.owner = job.handlerId;
      this.midExchange = true;
    } else {
      this.midExchange = false;
      this.owner = scanner.status === IDLE ? null : job.handlerId;
    }
    job.resolve(bytes);
  }

  private async cleanup(handlerId: number): Promise<void> {
    if (this.owner === handlerId) {
      try {
        if (this.midExchange) await this.db.runExclusive(() => this.db.execProtocolRaw(SYNC));
        if (this.db.isInTransaction()) await this.db.exec('ROLLBACK');
      } catch {
        // Nothing more to undo.
      }
      this.owner = null;
      this.midExchange = false;
    }
    const names = this.statements.get(handlerId);
    this.statements.delete(handlerId);
    for (const name of names ?? []) {
      await this.db.exec(`DEALLOCATE "${name.replace(/"/g, '""')}"`).catch(() => {
        // Already gone (DISCARD ALL, a failed PREPARE): nothing left to free.
      });
    }
  }
}
