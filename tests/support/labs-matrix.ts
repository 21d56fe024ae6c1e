/**
 * The proof that every lab is gradeable: `kafkaiq check` on all of them, on the real broker (and
 * the 3-node cluster for the failover labs), with the full fault plans (kills, a zombie, broker
 * restarts, a killed transaction coordinator). Solutions take the full plan; programs that must fail
 * take the quick plan, or the full one when their `// full-plan:` line says why (see checkLabs). Each lab is one assertion, so a failure names the lab,
 * the program and what the grader said.
 *
 * The matrix is cut into shards (tests/labs-<n>.test.ts), one test file each, so that the kafka
 * tier's lanes grade them side by side: dealLabs deals the labs out by their number of
 * fixtures, the largest first, each to the lightest shard so far, so any lab a folder adds lands
 * in exactly one shard, whose file asserts on it. The grading itself goes through one queue of all
 * the shards' fixtures (matrix-queue.ts): a shard that has taken all of its own takes the other's,
 * so both lanes stay busy to the end, and each shard then collects its labs' results.
 *
 * The database labs run on the embedded database a learner gets by default, and where PostgreSQL's
 * server binaries are installed (CI installs them) their whole matrix once more on a throwaway
 * real server, as a lab server given DATABASE_URL would. Both share one pool of graders, so the
 * real server's fixtures cost no run of their own. (Without the binaries CI fails with the fix.)
 *
 * A shard's graders (3 to 5 at once, as the queue admits them: MATRIX_CONCURRENCY) take turns over
 * two single brokers, its lane's and one of its own, so a full plan's broker restart holds up only
 * the grades on its broker.
 */
import pg from 'pg';
import { sandboxPolicy } from '../../lab-server/runner/program/sandbox/policy.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defaultBrokerPort } from '../../lab-server/broker/ports.ts';
import { connectCluster, type KafkaCluster } from '../../lab-server/broker/cluster.ts';
import { ClusterPool, type ClusterSource } from '../../lab-server/broker/cluster-pool.ts';
import { DatabasePool } from '../../lab-server/db/pool.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { fixtureRank, labFixtures, runFixtures, type Fixture, type FixtureResult } from '../../lab-server/runner/check-labs.ts';
import { fixtureKey, MATRIX_CONCURRENCY, MatrixQueueClient, type QueueEntry } from './matrix-queue.ts';
import { postgresBin, POSTGRES_MISSING, ThrowawayPostgres } from './postgres.ts';

/** Suffix of a database lab's fixtures graded on the real server. */
const ON_SERVER = ' (PostgreSQL server)';
/** How long a shard's setup may take: its grading, then waiting for the results the other shard is grading. */
const MATRIX_SETUP_MS = 25 * 60_000;

/**
 * The labs dealt into `shards` lists by weight: the heaviest first, each to the lightest list so
 * far (ties to the lower list, equal weights by name), so every lab lands in exactly one list.
 */
export function dealLabs(weights: ReadonlyMap<string, number>, shards: number): string[][] {
  const loads = Array.from({ length: shards }, () => ({ total: 0, labs: [] as string[] }));
  for (const [lab, weight] of [...weights].sort(([a, wa], [b, wb]) => wb - wa || a.localeCompare(b))) {
    const lightest = loads.reduce((min, load) => (load.total < min.total ? load : min));
    lightest.labs.push(lab);
    lightest.total += weight;
  }
  return loads.map((load) => load.labs);
}

/** Registers the matrix of one shard's labs as this test file's hooks and tests. */
export async function labMatrix(shard: number, shards: number): Promise<void> {
  // Every shard deals the same list, fixed by the global setup before any file ran: listed here,
  // a lab another file scaffolds meanwhile would change one shard's deal and not the other's, and a
  // lab could land in both shards or in neither.
  const all = inject('matrixLabs');
  /** Every lab with a `database` block. */
  const allDatabaseLabs = (await Promise.all(all.map((id) => loadLab(id)))).filter((lab) => lab.definition.kind === 'pipeline' && lab.definition.database).map((lab) => lab.id);
  const allFixtures = await labFixtures(all);
  // A lab weighs its fixtures; a database lab's twice, as they are graded on both databases.
  const weights = new Map(all.map((lab) => [lab, allFixtures.filter((f) => f.lab === lab).length * (allDatabaseLabs.includes(lab) ? 2 : 1)]));
  const dealt = dealLabs(weights, shards);
  const labs = dealt[shard - 1]!;
  if (labs.length === 0) {
    it('has no lab of its own: every lab KAFKAIQ_LABS names is dealt to another shard', () => {
      expect(dealt.flat().sort()).toEqual([...all].sort());
    });
    return;
  }
  const databaseLabs = allDatabaseLabs.filter((lab) => labs.includes(lab));
  const bin = postgresBin();
  // Every fixture of the run, listed the same way in every shard: the database labs' once more on
  // the real server. A fixture needing the 3-node cluster or a database is graded by its owner,
  // which starts them; any other shard may take the rest.
  const everyFixture: Fixture[] = [...allFixtures, ...(bin ? allFixtures.filter((f) => allDatabaseLabs.includes(f.lab)).map((f) => ({ ...f, program: f.program + ON_SERVER })) : [])];
  const pinned = (f: Fixture) => Boolean(f.threeNodes) || allDatabaseLabs.includes(f.lab);
  const ownerOf = (lab: string) => dealt.findIndex((dealtLabs) => dealtLabs.includes(lab)) + 1;
  // Pinned fixtures before the rest, so that what only one shard may grade is not left to the end.
  const queueRank = (f: Fixture) => (f.threeNodes ? 0 : pinned(f) ? 1 : 2) * 10 + fixtureRank(f);
  const entries: QueueEntry[] = [...everyFixture]
    .sort((a, b) => queueRank(a) - queueRank(b))
    .map((f) => ({ key: fixtureKey(f), owner: ownerOf(f.lab), pinned: pinned(f) }));
  const mine = everyFixture.filter((f) => labs.includes(f.lab));

  let clusters: ClusterPool;
  let second: KafkaCluster | null = null;
  let server: ThrowawayPostgres | null = null;
  const pools: DatabasePool[] = [];
  let results: FixtureResult[] = [];
  /** The databases that existed on the real server while the fixtures ran. */
  let databasesDuring: string[] = [];

  beforeAll(async () => {
    const started = Date.now();
    // Each lab on the cluster it declares: the 3-node cluster of the failover labs comes from the
    // run's global setup, started on first use.
    clusters = new ClusterPool();
    const log = (line: string) => console.log(line);
    // A failover lab's 3-node cluster starts before the first grade, not beside the first grades:
    // three JVM starts at once would slow the single broker's first restarts past a grade's waits.
    if (mine.some((f) => f.threeNodes)) await clusters.get('three-nodes');
    let watcher: pg.Client | null = null;
    let timer: NodeJS.Timeout | undefined;
    const seen = new Set<string>();
    // One embedded database per grader the shard always runs: at its floor, no fixture waits for another's to be free.
    const embedded = new DatabasePool({ maxEmbedded: MATRIX_CONCURRENCY.floorPerShard, log: (line) => console.log(`[database] ${line}`) });
    pools.push(embedded);
    for (const fixture of mine) if (databaseLabs.includes(fixture.lab)) fixture.databases = embedded;
    if (bin && databaseLabs.length > 0) {
      server = new ThrowawayPostgres(bin);
      await server.start();
      const onServer = new DatabasePool({ url: server.url, log: (line) => console.log(`[database] ${line}`) });
      pools.push(onServer);
      for (const fixture of mine) if (fixture.program.endsWith(ON_SERVER)) fixture.databases = onServer;
      // Which databases exist while the attempts run: one per attempt, named after its namespace.
      watcher = new pg.Client(server.url);
      await watcher.connect();
      const client = watcher;
      timer = setInterval(() => {
        client
          .query("SELECT datname FROM pg_database WHERE datname LIKE 'kiq\\_%'")
          .then(({ rows }) => rows.forEach((r: { datname: string }) => seen.add(r.datname)))
          .catch(() => {});
      }, 500);
    }
    // A second teaching broker of its own: the graders take turns over both, so a broker restart
    // (a fault of the full plans) holds up only the grades on the broker it restarts.
    second = await connectCluster({ basePort: defaultBrokerPort() + 20, external: '', log: (line) => console.log(`[broker 2] ${line}`) });
    const secondLane: ClusterSource = { get: (kind) => (kind === 'single' ? Promise.resolve(second!) : clusters.get(kind)), release: (kind) => (kind === 'single' ? Promise.resolve() : clusters.release(kind)) };
    const queue = new MatrixQueueClient(inject('matrixQueue'), shard);
    await queue.register(entries);
    const byKey = new Map(everyFixture.map((f) => [fixtureKey(f), f]));
    try {
      await runFixtures(mine, [clusters, secondLane], {
        // As many graders as the shard may ever run; the queue holds back those the machine has no room for.
        parallel: MATRIX_CONCURRENCY.ceilingPerShard,
        log,
        releaseThreeNodes: true,
        queue: {
          take: async () => {
            const key = await queue.claim();
            return key === undefined ? undefined : byKey.get(key);
          },
          done: (result) => queue.report(fixtureKey(result), result),
        },
      });
      // Some of this shard's fixtures may still be on the other shard's graders.
      results = await queue.collect(mine.map(fixtureKey), MATRIX_SETUP_MS - (Date.now() - started) - 60_000);
    } finally {
      clearInterval(timer);
      await watcher?.end().catch(() => {});
    }
    databasesDuring = [...seen];
  }, MATRIX_SETUP_MS);

  afterAll(async () => {
    for (const pool of pools) await pool.close().catch(() => {});
    await clusters?.close();
    await second?.close();
    server?.stopNow();
  });

  describe.each(labs)('lab %s', (lab) => {
    it('passes its solution, fails its starter, and fails each broken variant on its named check', () => {
      const mine = results.filter((r) => r.lab === lab);
      expect(mine.map((r) => r.program)).toEqual(expect.arrayContaining(['solution', 'starter']));
      const wrong = mine.filter((r) => !r.ok).map((r) => `${r.program}: expected ${r.expected}, got ${r.got}`);
      expect(wrong).toEqual([]);
    });

    // A command's connections pass the sandbox's relay like our bundle's: its faults are held at
    // their crash points on the wire, whatever its language (a JVM, Python on librdkafka, kcat).
    it.runIf(sandboxPolicy().sandboxed)('aims the faults of its command fixtures at crash points, and lands them there', () => {
      const commands = results.filter((r) => r.lab === lab && r.program.startsWith('cmd/'));
      const unaimed = commands.filter((r) => r.aimed.faults === 0 || r.aimed.atPoint === 0).map((r) => `${r.program}: ${r.aimed.atPoint} of ${r.aimed.faults} aimed faults at their point`);
      expect(unaimed).toEqual([]);
    });
  });

  describe('the database labs', () => {
    it.runIf(!bin && Boolean(process.env.CI))('have a real PostgreSQL server to run on in CI', () => {
      expect.fail(POSTGRES_MISSING);
    });

    it.skipIf(!bin || databaseLabs.length === 0)('ran on a real PostgreSQL server, each attempt in a database of its own, dropped afterwards', async () => {
      if (!process.env.KAFKAIQ_LABS) expect(allDatabaseLabs).toEqual(expect.arrayContaining(['db-sink', 'outbox', 'read-committed-downstream']));
      const onServer = results.filter((r) => r.program.endsWith(ON_SERVER));
      expect(databasesDuring.length).toBeGreaterThanOrEqual(Math.min(onServer.length, 3));
      // Each attempt's database is named after its namespace: 128 random bits, nothing a client chose.
      for (const name of databasesDuring) expect(name).toMatch(/^kiq_kiq_[0-9a-f]{32}$/);
      const client = new pg.Client(server!.url);
      await client.connect();
      try {
        const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname LIKE 'kiq\\_%'");
        expect(rows).toEqual([]);
      } finally {
        await client.end();
      }
    });

    it.skipIf(!bin || databaseLabs.length === 0)('graded every fixture on both databases, the same way', () => {
      for (const lab of databaseLabs) {
        const mine = results.filter((r) => r.lab === lab);
        const embedded = mine.filter((r) => !r.program.endsWith(ON_SERVER)).map((r) => r.program).sort();
        const onServer = mine.filter((r) => r.program.endsWith(ON_SERVER)).map((r) => r.program.slice(0, -ON_SERVER.length)).sort();
        expect(embedded).toEqual(expect.arrayContaining(['solution', 'starter']));
        expect(onServer).toEqual(embedded);
      }
      expect(results.filter((r) => databaseLabs.includes(r.lab) && !r.ok).map((r) => `${r.lab} ${r.program}: ${r.got}`)).toEqual([]);
    });
  });
}
