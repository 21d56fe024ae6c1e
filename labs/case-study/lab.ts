import { defineLab, type ExpectedApiEffect, type ExpectedRecord, type SeedRecord, type TransformContext } from '../../src/shared/lab.ts';

// Design of the lab (issue #6, the case study of lesson 10.1.15):
//  - The program has two stages: counting (Kafka-only transactions: results, outbox, state and
//    input offsets together) and a sender (its own group on the outbox, POSTs with a key made of
//    the window, offsets committed after the answer). The grader sees one program.
//  - clicks-per-minute carries each window's FINAL count only (emit on close), unlike the lesson's
//    job, which also streams updates: one record per window lets the grader's record checks
//    (no-loss, no-duplicates, no-aborted-reads, transform-correct) judge it exactly, and the
//    starter's update stream fails them.
//  - The API effects count every application (count: 'applied'): a window result applied twice is
//    a duplicate even with the same count; a replay under the same key is not an application.
//  - no-transaction-timeouts reads the coordinator's log (lab-server/runner/transaction-timeouts.ts).

// ---- the clicks the grader writes ---------------------------------------------------------------
//
// Three campaigns (k000, k001, k002): the seeder gives record `index` the key k00(index % 3) and
// puts key k00n on partition n, so each input partition carries one campaign. Event time advances
// STEP_MS per record, from FIRST_CLICK_MS on (40 s into a minute, so the first window closes early),
// with up to 3 s of jitter that never reorders a partition. 240 clicks span 16 minutes of event
// time, written in seconds: event time drives the windows, never the wall clock. Every wave of
// input the grader writes between two faults covers more than a minute of each partition's event
// time, so every wave closes windows and makes the program call the API.

const MINUTE_MS = 60_000;
const GRACE_MS = 10_000;
const FIRST_CLICK_MS = Date.UTC(2026, 2, 2, 9, 0, 40);
const STEP_MS = 4_000;
const RECORDS = 240;
const CAMPAIGNS = 3;

const eventTime = (index: number) => FIRST_CLICK_MS + index * STEP_MS - ((index * 7_919) % 3_000);

/** One click: compact JSON; the clickId carries the seeding index, so every value is unique. */
const clickValue = (index: number, key: string): string =>
  JSON.stringify({ clickId: `clk-${String(index).padStart(5, '0')}`, campaignId: key, ts: eventTime(index) });

interface Click {
  clickId: string;
  campaignId: string;
  ts: number;
}

/** One window result: the value of clicks-per-minute, the outbox, and the body of POST /rankings. */
const windowResult = (campaignId: string, windowStart: number, count: number) =>
  JSON.stringify({ campaignId, windowStart, windowEnd: windowStart + MINUTE_MS, count });

// ---- what the job must compute ------------------------------------------------------------------
//
// A window [start, start + 60 s) of a campaign is FINAL once the stream time of its input partition
// (the highest event time read from that partition) reaches its end + 10 s grace. The job emits each
// final window once, with the number of committed clicks in it. Windows still open when the input
// ends are never emitted. No click of this input is ever later than the grace period allows.

interface Window {
  campaignId: string;
  start: number;
  partition: number;
  count: number;
}
interface Windows {
  /** Per `${campaignId}|${start}`: the window, if it is final in its partition. */
  final: Map<string, Window>;
}

const windowKey = (campaignId: string, start: number) => `${campaignId}|${start}`;
const windowStartOf = (ts: number) => Math.floor(ts / MINUTE_MS) * MINUTE_MS;

/** The final windows a job computes from these clicks (stream time per partition, as above). */
function finalWindows(clicks: readonly { partition: number; click: Click }[]): Windows {
  const streamTime = new Map<number, number>();
  const all = new Map<string, Window>();
  for (const { partition, click } of clicks) {
    streamTime.set(partition, Math.max(streamTime.get(partition) ?? -Infinity, click.ts));
    const start = windowStartOf(click.ts);
    const key = windowKey(click.campaignId, start);
    const w = all.get(key) ?? { campaignId: click.campaignId, start, partition, count: 0 };
    w.count++;
    all.set(key, w);
  }
  const final = new Map<string, Window>();
  for (const [key, w] of all) if (w.start + MINUTE_MS + GRACE_MS <= (streamTime.get(w.partition) ?? -Infinity)) final.set(key, w);
  return { final };
}

const parsed = new Map<string, Click>();
const parse = (value: string): Click => {
  let click = parsed.get(value);
  if (!click) parsed.set(value, (click = JSON.parse(value) as Click));
  return click;
};

/**
 * Computed once per run (per `committed` array): the final windows of the committed clicks (what a
 * correct job emits), and those of ALL clicks, aborted ones included (what a job reading
 * read_uncommitted emits: higher counts, and windows made only of aborted clicks). Every seeded
 * index below RECORDS exists: those not in `committed` are the aborted ones, with the key and
 * partition the seeder gives them.
 */
const cache = new WeakMap<readonly SeedRecord[], { committed: Windows; uncommitted: Windows }>();
function windowsOf(context: TransformContext) {
  let result = cache.get(context.committed);
  if (!result) {
    const committed = context.committed.map((r) => ({ partition: r.partition, click: parse(r.value) }));
    const allClicks = Array.from({ length: RECORDS }, (_, index) => {
      const key = `k${String(index % CAMPAIGNS).padStart(3, '0')}`;
      return { partition: index % CAMPAIGNS, click: parse(clickValue(index, key)) };
    });
    result = { committed: finalWindows(committed), uncommitted: finalWindows(allClicks) };
    cache.set(context.committed, result);
  }
  return result;
}

/**
 * clicks-per-minute: the final count of the click's window, keyed campaignId|windowStart, if that
 * window is final. Many clicks name the same record: the grader expects it once. For an aborted
 * click (which the grader asks about to recognise records that must not exist) it is the record a
 * read_uncommitted job would write: the count including the aborted clicks, never a correct one.
 */
const transform = (input: SeedRecord, context: TransformContext): ExpectedRecord[] => {
  const click = parse(input.value);
  const { committed, uncommitted } = windowsOf(context);
  const key = windowKey(click.campaignId, windowStartOf(click.ts));
  const committedWindow = committed.final.get(key);
  const isCommitted = context.committed.includes(input);
  const w = isCommitted ? committedWindow : uncommitted.final.get(key);
  if (!w) return [];
  // An aborted click in a window whose uncommitted count equals the committed one cannot exist
  // (the click itself is counted), so this record never collides with a correct one.
  return [{ topic: 'counts', key, value: windowResult(w.campaignId, w.start, w.count) }];
};

/** POST /rankings: each final window once, id campaignId|windowStart|windowEnd, with its count. */
const effects = (input: SeedRecord, context: TransformContext): ExpectedApiEffect[] => {
  const click = parse(input.value);
  const w = windowsOf(context).committed.final.get(windowKey(click.campaignId, windowStartOf(click.ts)));
  if (!w) return [];
  const end = w.start + MINUTE_MS;
  return [
    {
      id: `${w.campaignId}|${w.start}|${end}`,
      body: { campaignId: w.campaignId, windowStart: String(w.start), windowEnd: String(end), count: w.count },
    },
  ];
};

export default defineLab({
  title: 'Case study: fix the clicks-per-minute job',
  summary:
    'Count the clicks of INPUT_TOPIC (JSON {"clickId","campaignId","ts"}, ts = event time in epoch ms) per campaign in one-minute tumbling windows [start, start + 60 000) with 10 s of grace, ' +
    'and emit each window once, when it is final: when the stream time of its input partition (the highest ts read from that partition) reaches windowEnd + 10 000. ' +
    'Write each final window to OUTPUT_TOPIC (clicks-per-minute), key campaignId|windowStart, value {"campaignId","windowStart","windowEnd","count"} (compact JSON, this field order), ' +
    'counting committed clicks only, and post it to the ranking API (POST API_URL/rankings with that value as body) exactly once. ' +
    'The starter is the job of the case study: it posts every update from inside its transaction without an Idempotency-Key and waits 30 s for the API. Fix it: ' +
    'write the results AND an outbox record (OUTBOX_TOPIC) in the transaction that commits the input offsets, and let a second stage of the same program (its own consumer group, read_committed) ' +
    'post each outbox record with an Idempotency-Key made of the window (e.g. campaignId|windowStart|windowEnd) and a client timeout far below the transaction timeout, retrying with the same key, committing its offset after the API answered. ' +
    'The grader kills your program right after the API answered and mid-transaction, makes the API slow, fail and lose answers, then checks each window was posted exactly once, ' +
    'that a read_committed reader of OUTPUT_TOPIC sees the right final counts, and that no transaction was rolled back by its timeout. ' +
    'Example: 3 committed clicks of k001 between 09:01:00 and 09:01:59.999 give key k001|1772442060000, value {"campaignId":"k001","windowStart":1772442060000,"windowEnd":1772442120000,"count":3}, ' +
    'once partition 1 has seen a click at 09:02:10 or later.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'INPUT_TOPIC',
      description:
        'The clicks (3 partitions), keyed by campaign (k000 on partition 0, k001 on 1, k002 on 2), as compact JSON: {"clickId":"clk-00004","campaignId":"k001","ts":1772442054324}. ' +
        'ts is the event time (epoch ms); within a partition it only grows. 240 clicks over 16 minutes of event time, some in aborted transactions: never count those.',
    },
    {
      name: 'OUTPUT_TOPIC',
      description:
        'clicks-per-minute (3 partitions): one record per final window, key campaignId|windowStart, e.g. k001|1772442060000, ' +
        'value {"campaignId":"k001","windowStart":1772442060000,"windowEnd":1772442120000,"count":3}. Read with read_committed by the grader.',
    },
    {
      name: 'OUTBOX_TOPIC',
      description:
        'Internal (3 partitions): the ranking updates still to post, written in the counting transaction; your sender stage reads it (read_committed) and posts each record. The format is yours; the window result itself is simplest.',
    },
    {
      name: 'STATE_TOPIC',
      description:
        'Internal (3 partitions, compacted): the counting stage\'s open windows and stream time per input partition, written in the same transaction as the results and offsets ' +
        '(e.g. key p1 on partition 1, value {"streamTime":1772442054324,"windows":{"k001|1772442000000":3}}); read it back when the program starts. The starter already does this.',
    },
    {
      name: 'API_URL',
      description:
        'Base URL of the ranking API for this attempt, no trailing slash, e.g. http://127.0.0.1:41234/a/kiq-3f2a-1. POST API_URL/rankings with Content-Type: application/json and ' +
        'the body {"campaignId","windowStart","windowEnd","count"}: 201 created or 200 replaced (an upsert). It honours an Idempotency-Key header: the same key and body again gets the stored ' +
        'answer (header Idempotent-Replayed: true) and applies nothing; the same key with another body is a 422; a key whose first request is still in progress is a 409. ' +
        'A request without a key is applied every time.',
    },
    {
      name: 'GROUP_ID',
      description:
        'Consumer group of the counting stage (the grader checks its offsets on INPUT_TOPIC). Derive the sender\'s group from it, `${GROUP_ID}-sender`, and the group that reads STATE_TOPIC back, `${GROUP_ID}-restore`: your program is allowed exactly these groups.',
    },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id for the counting stage\'s producer; the same on every restart of this instance' },
  ],
  topics: [
    { name: 'clicks', env: 'INPUT_TOPIC', partitions: 3, role: 'input', description: 'Clicks as JSON with their event time, keyed by campaign' },
    { name: 'outbox', env: 'OUTBOX_TOPIC', partitions: 3, role: 'internal', description: 'Counting stage -> sender: the final windows to post' },
    {
      name: 'state',
      env: 'STATE_TOPIC',
      partitions: 3,
      role: 'internal',
      description: 'The open windows and stream time of each input partition',
      config: { 'cleanup.policy': 'compact' },
    },
    { name: 'counts', env: 'OUTPUT_TOPIC', partitions: 3, role: 'output', description: 'clicks-per-minute: one final count per campaign and window' },
  ],
  seeds: [{ topic: 'clicks', records: RECORDS, keys: CAMPAIGNS, transactionSize: 5, abortEvery: 4, value: clickValue }],
  transform,
  api: {
    service: 'rankings',
    env: 'API_URL',
    what: 'ranking update',
    effects,
    // Every application counts: a window result applied twice (no key, or a new key per attempt)
    // is a duplicate even when the count is the same. A replay under the same key applies nothing.
    count: 'applied',
    faults: {
      // api-slow: one call answered 6 s late. A sender with a short client timeout retries (409
      // while the first call works, then the stored answer). A program that calls the API inside
      // its transaction holds it open for 6 s, longer than a short transactionTimeout plus the
      // broker's 2 s check interval: the coordinator rolls it back (no-transaction-timeouts).
      slowMs: 6_000,
      slowCalls: 1,
      errorStatus: 503,
      errorCalls: 2,
      // api-timeout: applied, answer held; a retry with a NEW key applies the result again.
      timeoutHoldMs: 10_000,
    },
  },
  kafkaIds: { groups: [{ name: '{GROUP_ID}-sender' }, { name: '{GROUP_ID}-restore' }] },
  faults: {
    // kill at after:http: the ranking is applied, nothing after it is committed (the sender's offset,
    // or the transaction of a job that posts inside it); the restart posts it again: harmless only
    // with a key made from the window. kill mid-transaction / after the commit of the counting
    // stage: its state and outbox must survive. api-timeout: a retry must carry the same key.
    // api-slow: no transaction may wait for the API. api-error: 503s must be retried, not dropped.
    // broker-restart: both stages lose their connections mid-work and must pick up where they were.
    full: [
      { kind: 'kill', at: ['after:http'] },
      { kind: 'kill', at: ['after:send', 'before:commit'], topic: 'counts' },
      { kind: 'api-timeout' },
      { kind: 'api-slow' },
      { kind: 'kill', at: ['after:commit'], topic: 'counts' },
      { kind: 'api-error' },
      { kind: 'broker-restart' },
    ],
    // The quick plan keeps the faults that catch the broken variants (kill at after:http,
    // api-timeout, api-slow; aborted input is always there); the full plan adds the rest.
    quick: [{ kind: 'kill', at: ['after:http'] }, { kind: 'api-timeout' }, { kind: 'api-slow' }],
  },
  checks: [
    'no-duplicate-effects',
    'no-lost-effects',
    'effects-correct',
    'no-transaction-timeouts',
    'no-loss',
    'no-duplicates',
    'no-aborted-reads',
    'transform-correct',
    'offsets-consistent',
    'no-hanging-transactions',
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    // 30 s unless the program sets its own: a transaction left open by a kill is fenced by the
    // restart long before. Not 10 s: under six grades on two cores a correct solution's transaction
    // can stay open longer than that. The variant that calls the API inside its transaction
    // sets 3 s itself, as a program tuned for "fast" transactions would.
    producer: { transactionTimeout: 30_000 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  checkCoverage: [
    {
      check: 'no-hanging-transactions',
      coverage: 'none',
      reason:
        'a counting stage holding its last transaction open (broken/counts-commit-when-full) is not caught on every seed: when the faults overrun the time limit, the work is judged done while it restarts, and no-loss fails instead',
    },
  ],
  // A cap for stuck programs, not a target: a full grade takes about 45 s on a quiet machine, and up
  // to four times that with six grades on two cores (CI's load). A quick grade takes 15-25 s alone
  // and up to 75 s at that load; its kill may be the plan's last fault, and the restarted sender
  // must still have time to post (and, if it is wrong, to publish) what it had not committed.
  timeLimitMs: 180_000,
  quickTimeLimitMs: 90_000,
});
