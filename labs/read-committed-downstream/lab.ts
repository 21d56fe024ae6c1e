import { defineLab, type SeedRecord, type SeedTransactionInfo } from '../../src/shared/lab.ts';

// ---- the window results the grader writes -------------------------------------------------------
//
// An upstream windowing job (played by the grader) counts clicks per campaign per minute and
// writes its results to a transactional topic. Every seeding transaction is one "firing" of that
// job: for each campaign it emits the result for one one-minute window three times, an early
// count, an updated count, then the final one (sometimes LOWER than the update: bot clicks
// removed, or higher: late clicks). A consumer must therefore treat each result as the new
// absolute value of its window (an upsert keyed by campaign_id + window_start), never add it up.
//
// One firing in ABORT_EVERY is aborted (the upstream job crashed mid-transaction; which ones, the
// grade's seed decides): its records stay in the log but must never be seen by a read_committed
// consumer. Its values are built knowing it aborts (the seeder says so), because they must leave
// a trace no later committed result overwrites: an ordinary firing that aborts can leave none (the
// next firing may correct the very window it wrote). An aborted firing starts
// with an inflated "correction" of the PREVIOUS minute's window (a window that also has committed
// results) and then early counts for a minute that never gets a committed result. A consumer
// that reads uncommitted data ends with the inflated value in a committed window's row and with
// rows for windows that do not exist: no-aborted-reads catches both.
//
// Each window lives inside one firing, so a consumer that commits offsets before its database
// write and dies in between loses whole windows (no-lost-effects), which no later record repairs.

const CAMPAIGNS = 4; // one Kafka key per campaign: k000..k003 (so all its results stay in order)
const PER_FIRING = 3 * CAMPAIGNS; // records per seeding transaction
const FIRINGS = 14;
const RECORDS = PER_FIRING * FIRINGS;
const ABORT_EVERY = 4;
const FIRST_MINUTE = Date.parse('2025-03-01T09:00:00Z');

const firingOf = (index: number) => Math.floor(index / PER_FIRING);

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** The three committed counts of a campaign's window: early, updated, final. */
function counts(campaign: number, firing: number): [number, number, number] {
  const early = 20 + ((campaign * 11 + firing * 7) % 30);
  const update = early + 6 + ((campaign + firing) % 5);
  const final = (campaign + firing) % 2 === 0 ? update - 2 - (firing % 3) : update + 3 + (campaign % 3);
  return [early, update, final];
}

interface WindowResult {
  campaign_id: string;
  window_start: string;
  window_end: string;
  clicks: number;
}

function windowResult(index: number, key: string, committed: boolean): WindowResult {
  const firing = firingOf(index);
  const position = index % PER_FIRING;
  const campaign = position % CAMPAIGNS;
  const slot = Math.floor(position / CAMPAIGNS); // 0: early, 1: update, 2: final
  let windowFiring = firing;
  let clicks = counts(campaign, firing)[slot]!;
  if (!committed) {
    // The crashed job's firing: an inflated correction of the previous minute (the one before the
    // first, when the first firing aborts), then early counts of a minute nothing ever confirms.
    if (slot === 0) {
      windowFiring = firing - 1;
      clicks = counts(campaign, firing - 1)[2] + 40 + campaign;
    }
  }
  const start = FIRST_MINUTE + windowFiring * 60_000;
  return { campaign_id: key, window_start: iso(start), window_end: iso(start + 60_000), clicks };
}

const resultValue = (index: number, key: string, txn: SeedTransactionInfo): string => JSON.stringify(windowResult(index, key, txn.committed));

/** The row a result leaves: the window's row, holding this count (the last committed one wins). */
const windowRow = (input: SeedRecord) => {
  const r = JSON.parse(input.value) as WindowResult;
  return { id: `${r.campaign_id}|${r.window_start}`, value: String(r.clicks) };
};

export default defineLab({
  title: 'Read committed downstream: window counts upserted into PostgreSQL',
  summary:
    'Read the clicks-per-minute results of CLICKS_TOPIC (JSON: {"campaign_id","window_start","window_end","clicks"}) and keep, in the ' +
    'PostgreSQL database at DATABASE_URL, ONE row per window in window_counts holding the LATEST committed count of that window (a window ' +
    'is reported several times: early, updated, final, and the final count may be lower), and one row per campaign in campaign_totals ' +
    'whose total_clicks is the sum of its windows\' current counts. Each result replaces the previous count of its window: an upsert keyed ' +
    'by (campaign_id, window_start), never an addition. The topic also holds aborted transactions whose counts must never show up, one of ' +
    'them left open for 6 s before its abort (your consumer waits behind it, then goes on). The ' +
    'grader kills your program around the database write and COMMIT and around the offset commit, then checks every window row and total. ' +
    'Example: {"campaign_id":"k001","window_start":"2025-03-01T09:02:00Z","window_end":"2025-03-01T09:03:00Z","clicks":41} followed by the ' +
    'same window with "clicks":38 leaves the row (\'k001\', 2025-03-01 09:02:00Z, 2025-03-01 09:03:00Z, 38), and k001\'s total counts 38 for it.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'CLICKS_TOPIC',
      description:
        'Topic to read (3 partitions), keyed by campaign id (k000..k003), so all results of a campaign are in order. Each value is a ' +
        'window result as compact JSON: {"campaign_id":"k002","window_start":"2025-03-01T09:05:00Z","window_end":"2025-03-01T09:06:00Z","clicks":37}. ' +
        'The same window comes several times with changing counts; some transactions were aborted and must leave no trace.',
    },
    { name: 'GROUP_ID', description: 'Consumer group id to use' },
    {
      name: 'DATABASE_URL',
      description:
        'PostgreSQL connection string of a database of your own for this run, e.g. postgresql://postgres:<password>@127.0.0.1:41234/postgres ' +
        '(connect with pg: new pg.Client({ connectionString: process.env.DATABASE_URL })). The grader has created the tables ' +
        'window_counts (campaign_id text NOT NULL, window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, clicks bigint NOT NULL) and ' +
        'campaign_totals (campaign_id text NOT NULL, total_clicks bigint NOT NULL), with no unique constraints yet. You may add indexes, ' +
        'constraints and tables of your own; the grader reads window_counts joined with campaign_totals.',
    },
  ],
  topics: [
    { name: 'clicks', env: 'CLICKS_TOPIC', partitions: 3, role: 'input', description: 'Clicks per campaign per minute, JSON, keyed by campaign' },
  ],
  // The first aborted firing stays open for 6 s before its abort, as the transaction of an upstream
  // job that hangs before it crashes does: read_committed readers stall at its first offset (the
  // LSO) while later firings commit behind it; read_uncommitted readers take its counts at once.
  seeds: [
    {
      topic: 'clicks',
      records: RECORDS,
      keys: CAMPAIGNS,
      transactionSize: PER_FIRING,
      abortEvery: ABORT_EVERY,
      value: resultValue,
      holdOpen: { transaction: 'first-aborted', holdMs: 6_000 },
    },
  ],
  database: {
    schema: `
      CREATE TABLE window_counts (
        campaign_id  text        NOT NULL,
        window_start timestamptz NOT NULL,
        window_end   timestamptz NOT NULL,
        clicks       bigint      NOT NULL
      );
      CREATE TABLE campaign_totals (
        campaign_id  text   NOT NULL,
        total_clicks bigint NOT NULL
      );`,
    // One row per window row (a window written twice shows up twice: no-duplicate-effects). Its
    // value is the count when the campaign's total agrees with the sum of the campaign's window
    // rows, and otherwise says what is wrong with the total: so effects-correct checks both the
    // latest count of every window and every campaign total (window counts right + totals equal
    // to their sums = totals right).
    effects: `
      SELECT w.campaign_id || '|' || to_char(w.window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS id,
             CASE
               WHEN t.n IS NULL THEN w.clicks || ' (but campaign_totals has no row for ' || w.campaign_id || ')'
               WHEN t.n > 1 THEN w.clicks || ' (but campaign_totals has ' || t.n || ' rows for ' || w.campaign_id || ')'
               WHEN t.total <> s.sum THEN w.clicks || ' (but the total_clicks of ' || w.campaign_id || ' is ' || t.total ||
                                          ', not the sum of its windows, ' || s.sum || ')'
               ELSE w.clicks::text
             END AS value
        FROM window_counts w
        JOIN (SELECT campaign_id, sum(clicks) AS sum FROM window_counts GROUP BY campaign_id) s USING (campaign_id)
        LEFT JOIN (SELECT campaign_id, min(total_clicks) AS total, count(*) AS n FROM campaign_totals GROUP BY campaign_id) t USING (campaign_id)`,
    // Several results share a window: the grader expects the LAST committed one's count (inputs
    // in seeding order), and flags a row holding a count only an aborted result carries.
    effect: windowRow,
    what: 'window row',
  },
  faults: {
    // after:db-write and before:db-commit land inside the database transaction (rolled back),
    // after:db-commit between the database commit and the offset commit (the batch is replayed:
    // harmless only for upserts of absolute values), after:commitOffsets between an offset commit
    // and a database write that comes after it (the window of offsets-first programs).
    full: [
      { kind: 'kill', at: ['after:db-commit'] },
      { kind: 'kill', at: ['after:db-write'] },
      { kind: 'kill', at: ['before:db-commit'] },
      { kind: 'kill', at: ['after:commitOffsets'] },
      // No broker restart: it costs ~12 s of a grade (measured) and catches nothing the kills
      // above do not; db-sink has one.
    ],
    quick: [
      { kind: 'kill', at: ['after:db-commit'] },
      { kind: 'kill', at: ['after:db-write'] },
      { kind: 'kill', at: ['after:commitOffsets'] },
    ],
  },
  checks: ['no-duplicate-effects', 'no-lost-effects', 'effects-correct', 'no-aborted-reads'],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  // A cap for stuck programs, not a target: a correct program needs about 40 s alone, and three
  // times that with four labs graded at once on two cores.
  timeLimitMs: 180_000,
  quickTimeLimitMs: 90_000,
});
