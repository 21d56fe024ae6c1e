/**
 * One queue of fixtures for all the lab matrix's shards (tests/support/labs-matrix.ts), served by
 * the run's global setup. Each shard was dealt whole labs, and its test file asserts on them; but
 * grade times vary far more than fixture counts (4 s to over 2 minutes), so a shard that graded
 * only its own would often finish minutes before the other, its lane grading nothing while the
 * machine had cores to spare. Through the queue a shard whose own fixtures are all taken grades
 * the other's, and each shard then collects its labs' results, wherever they were graded.
 *
 * A fixture is pinned to its owner when it needs what only the owner starts: the 3-node cluster of
 * a failover lab, or the databases (embedded and the throwaway PostgreSQL server) of a database lab.
 *
 * How many grades run at once follows the machine (admit): each shard always grades a few, and
 * more only while the cores have room. A grade's CPU comes in bursts between long waits (session
 * timeouts, a broker's restart), so a fixed number either leaves the cores idle while the
 * slow full plans wait, or, set higher, overloads them while the other lanes' files need them.
 */
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { FixtureResult } from '../../lab-server/runner/check-labs.ts';
import { retry } from '../../lab-server/core/retry.ts';
import { readJsonBody, sendJson } from '../../lab-server/server/json-body.ts';
import { describeError } from '../../src/shared/errors.ts';

const QueueEntrySchema = z
  .object({
    key: z.string().min(1).max(300).describe('The fixture: its lab and program, as fixtureKey writes them'),
    owner: z.number().int().min(1).max(64).describe('The shard that was dealt its lab, and asserts on its result'),
    pinned: z.boolean().describe('Only the owner may grade it (it needs a cluster or database only the owner starts)'),
  })
  .strict();
export type QueueEntry = z.infer<typeof QueueEntrySchema>;

const FixtureResultSchema = z
  .object({
    lab: z.string(),
    program: z.string(),
    expected: z.string(),
    got: z.string(),
    ok: z.boolean(),
    seconds: z.number(),
    aimed: z.object({ faults: z.number(), atPoint: z.number() }).strict(),
  })
  .strict();

const RequestSchemas = {
  '/register': z.object({ entries: z.array(QueueEntrySchema).max(10_000) }).strict(),
  '/claim': z
    .object({
      shard: z.number().int().min(1).max(64),
      claimId: z.string().uuid().describe('The same for every try of one claim: a try whose answer was lost gets the same fixture again, never a second one'),
    })
    .strict(),
  '/result': z.object({ key: z.string().min(1).max(300), result: FixtureResultSchema }).strict(),
  '/results': z.object({}).strict(),
};
type Route = keyof typeof RequestSchemas;

/** The key of a fixture in the queue: unique within a run (a database lab's program graded on the server carries its suffix). */
export const fixtureKey = (fixture: { lab: string; program: string }) => `${fixture.lab} ${fixture.program}`;

/** The next entry a shard may take: the first untaken one it owns or that is not pinned. */
export function nextClaim(entries: readonly QueueEntry[], taken: ReadonlySet<string>, shard: number): QueueEntry | undefined {
  return entries.find((entry) => !taken.has(entry.key) && (entry.owner === shard || !entry.pinned));
}

/** How many grades the matrix runs at once: a floor per shard, and a ceiling it grows to while the cores have room. */
export const MATRIX_CONCURRENCY = {
  /** Each shard grades at least this many at once, whatever the load. */
  floorPerShard: 3,
  /** And at most this many: its graders take turns over two brokers, and each broker restart holds up the grades on it. */
  ceilingPerShard: 5,
  /** Above its floor, a shard takes another fixture only while the machine was less busy than this... */
  roomBelowBusyPercent: 85,
  /** ...and at most one such fixture in this long (across shards), so the last one's load shows before the next. */
  admissionGapMs: 5_000,
} as const;

/** Whether a shard may start another grade now. `busyPercent` is null where the machine's load cannot be read. */
export function admit(load: { activeOfShard: number; busyPercent: number | null; msSinceLastExtra: number }, limits = MATRIX_CONCURRENCY): boolean {
  if (load.activeOfShard < limits.floorPerShard) return true;
  if (load.activeOfShard >= limits.ceilingPerShard || load.busyPercent === null) return false;
  return load.busyPercent < limits.roomBelowBusyPercent && load.msSinceLastExtra >= limits.admissionGapMs;
}

/**
 * The whole machine's busy share over the last `windowSeconds`, from /proc/stat sampled each second
 * (null off Linux, or before two samples).
 */
export class MachineLoad {
  private readonly samples: Array<{ total: number; idle: number }> = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly windowSeconds = 10) {
    this.sample();
    this.timer = setInterval(() => this.sample(), 1_000);
    this.timer.unref();
  }

  private sample(): void {
    let line: string;
    try {
      line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    } catch {
      return; // no /proc (not Linux): busyPercent stays null and the matrix keeps to its floor
    }
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: idle and iowait are the idle ones.
    this.samples.push({ total: ticks.slice(0, 8).reduce((a, b) => a + b, 0), idle: ticks[3]! + ticks[4]! });
    if (this.samples.length > this.windowSeconds + 1) this.samples.shift();
  }

  busyPercent(): number | null {
    if (this.samples.length < 2) return null;
    const first = this.samples[0]!;
    const last = this.samples[this.samples.length - 1]!;
    const total = last.total - first.total;
    return total > 0 ? 100 * (1 - (last.idle - first.idle) / total) : null;
  }

  close(): void {
    clearInterval(this.timer);
  }
}

const sameEntries = (a: readonly QueueEntry[], b: readonly QueueEntry[]) => a.length === b.length && a.every((entry, i) => entry.key === b[i]!.key && entry.owner === b[i]!.owner && entry.pinned === b[i]!.pinned);

/** The queue's state and its four requests, apart from HTTP. */
class MatrixQueueState {
  private entries: QueueEntry[] | null = null;
  private readonly taken = new Set<string>();
  private readonly results = new Map<string, FixtureResult>();
  /** Each fixture being graded, and the shard grading it. */
  private readonly active = new Map<string, number>();
  private lastExtra = 0;
  /** The fixture each claim was given, by its claimId. */
  private readonly granted = new Map<string, string>();

  constructor(private readonly busyPercent: () => number | null) {}

  handle(route: Route, body: unknown): { status: number; json: unknown } {
    switch (route) {
      case '/register': {
        const { entries } = RequestSchemas['/register'].parse(body);
        // Every shard computes the list from the labs the global setup fixed: a difference is a bug.
        if (this.entries && !sameEntries(this.entries, entries)) return { status: 409, json: { error: 'the shards listed different fixtures' } };
        this.entries ??= entries;
        return { status: 200, json: {} };
      }
      case '/claim': {
        const { shard, claimId } = RequestSchemas['/claim'].parse(body);
        if (!this.entries) return { status: 409, json: { error: 'no shard has registered the fixtures yet' } };
        const again = this.granted.get(claimId);
        if (again !== undefined) return { status: 200, json: { key: again } };
        const entry = nextClaim(this.entries, this.taken, shard);
        if (!entry) return { status: 200, json: { key: null } };
        const activeOfShard = [...this.active.values()].filter((s) => s === shard).length;
        if (!admit({ activeOfShard, busyPercent: this.busyPercent(), msSinceLastExtra: Date.now() - this.lastExtra })) return { status: 200, json: { key: null, wait: true } };
        if (activeOfShard >= MATRIX_CONCURRENCY.floorPerShard) this.lastExtra = Date.now();
        this.taken.add(entry.key);
        this.active.set(entry.key, shard);
        this.granted.set(claimId, entry.key);
        return { status: 200, json: { key: entry.key } };
      }
      case '/result': {
        const { key, result } = RequestSchemas['/result'].parse(body);
        this.results.set(key, result);
        this.active.delete(key);
        return { status: 200, json: {} };
      }
      case '/results':
        return { status: 200, json: { results: Object.fromEntries(this.results) } };
    }
  }
}

/** The largest request the queue reads: the fixture list, or one result with its evidence. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Serves a new queue on 127.0.0.1 (POST /register, /claim, /result, /results, JSON bodies); `busyPercent` stands in for the machine's load in tests. */
export async function serveMatrixQueue(options: { busyPercent?: () => number | null } = {}): Promise<{ url: string; close(): Promise<void> }> {
  const machine = options.busyPercent ? null : new MachineLoad();
  const state = new MatrixQueueState(options.busyPercent ?? (() => machine!.busyPercent()));
  const server = http.createServer((req, res) => {
    // One request per connection: a client reusing an idle keep-alive connection just as the
    // server closes it gets ECONNRESET (undici and Node's server time idle sockets out separately),
    // and under a CI's load the two timers drift apart.
    res.shouldKeepAlive = false;
    const route = req.url as Route;
    if (req.method !== 'POST' || !(route in RequestSchemas)) {
      res.writeHead(404).end();
      return;
    }
    readJsonBody(req, MAX_BODY_BYTES).then(
      (body) => {
        if (!body.ok) return sendJson(res, body.status, { error: body.status === 413 ? 'the request is too large' : 'the request is not JSON' });
        let reply: { status: number; json: unknown };
        try {
          reply = state.handle(route, body.value);
        } catch (err) {
          reply = { status: 400, json: { error: describeError(err).slice(0, 500) } };
        }
        sendJson(res, reply.status, reply.json);
      },
      (err: unknown) => sendJson(res, 400, { error: describeError(err) }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      machine?.close();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A shard's side of the queue. */
export class MatrixQueueClient {
  constructor(
    private readonly url: string,
    private readonly shard: number,
  ) {}

  /**
   * A request, tried again when the connection fails (every request is safe to repeat: a claim by
   * its claimId), never when the queue answered with an error.
   */
  private async post<T>(route: Route, body: unknown): Promise<T> {
    const res = await retry(() => fetch(`${this.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), {
      retries: 5,
      minDelayMs: 200,
      // fetch rejects with a TypeError only when no answer came (refused, reset, closed).
      shouldRetry: (err) => err instanceof TypeError,
    });
    const json = (await res.json()) as T & { error?: string };
    if (!res.ok) throw new Error(`the lab matrix's queue refused ${route}: ${json.error ?? res.status}`);
    return json;
  }

  register(entries: QueueEntry[]): Promise<unknown> {
    return this.post('/register', { entries });
  }

  /**
   * The key of the next fixture this shard grades, or undefined when none is left for it; while
   * the queue says the machine has no room for another grade, asked again each second.
   */
  async claim(): Promise<string | undefined> {
    for (;;) {
      const { key, wait } = await this.post<{ key: string | null; wait?: boolean }>('/claim', { shard: this.shard, claimId: randomUUID() });
      if (!wait) return key ?? undefined;
      await sleep(1_000);
    }
  }

  async report(key: string, result: FixtureResult): Promise<void> {
    await this.post('/result', { key, result });
  }

  /**
   * The results of `keys` once every one of them has been graded (the other shard may still be
   * grading one it took): polled, up to `timeoutMs`, then an error naming those still missing.
   */
  async collect(keys: readonly string[], timeoutMs: number): Promise<FixtureResult[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { results } = await this.post<{ results: Record<string, FixtureResult> }>('/results', {});
      const missing = keys.filter((key) => !(key in results));
      if (missing.length === 0) return keys.map((key) => results[key]!);
      if (Date.now() > deadline) throw new Error(`the lab matrix never received the results of: ${missing.join(', ')}`);
      await sleep(1_000);
    }
  }
}
