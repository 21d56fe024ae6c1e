import { defineLab } from '../../src/shared/lab.ts';

// ---- the page views the grader writes ----------------------------------------------------------

const PAGES = ['/', '/pricing', '/docs', '/blog', '/signup', '/login', '/careers'];

/** One page view per input record; the id carries the seeding index, so every view is unique. */
const pageView = (index: number, key: string): string =>
  JSON.stringify({ id: `pv-${String(index).padStart(5, '0')}`, user: key, page: PAGES[(index * 5) % PAGES.length], ms: 40 + ((index * 131) % 960) });

// ---- what each view must become: one CSV line, id,user,page,ms -----------------------------------

const toCsv = (value: string): string => {
  const v = JSON.parse(value) as { id: string; user: string; page: string; ms: number };
  return `${v.id},${v.user},${v.page},${v.ms}`;
};

export default defineLab({
  title: 'Batching: exactly once, and many times faster',
  summary:
    'Read every page view of INPUT_TOPIC (JSON {"id","user","page","ms"}) and write it to OUTPUT_TOPIC as one CSV line id,user,page,ms with the same key, ' +
    'e.g. {"id":"pv-00017","user":"k005","page":"/pricing","ms":347} becomes pv-00017,k005,/pricing,347; exactly once, offsets in the same transaction, through kills, ' +
    'restarts, a zombie, a failed send and a broker restart. The starter is correct but opens one transaction per record. Before the faults, the grader runs ' +
    'a baseline program (correct, one transaction per record, already tuned) and yours side by side, each on its own burst of 600 records committed in one ' +
    "transaction: yours must reach at least 5x the baseline's records per second. Put many records into each transaction.",
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'INPUT_TOPIC',
      description:
        'Page views to read (3 partitions), keyed by user, as compact JSON, e.g. {"id":"pv-00017","user":"k005","page":"/pricing","ms":347}. ' +
        'Some were written in aborted transactions and must have no effect. For the throughput measurement this is a topic of its own, with a burst of 600 views.',
    },
    {
      name: 'OUTPUT_TOPIC',
      description: 'Where each view goes (3 partitions), same key, as the CSV line id,user,page,ms, e.g. pv-00017,k005,/pricing,347',
    },
    { name: 'GROUP_ID', description: 'Consumer group id to use' },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id for your producer; the same on every restart of this instance' },
  ],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 3, role: 'input', description: 'Page views as JSON, keyed by user' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 3, role: 'output', description: 'One CSV line per page view' },
  ],
  seeds: [{ topic: 'input', records: 150, keys: 12, transactionSize: 5, abortEvery: 4, value: pageView }],
  transform: (input) => [{ topic: 'output', key: input.key, value: toCsv(input.value) }],
  // Timed before the faults, side by side, each on topics of its own: labs/batching/baseline.ts and
  // the learner's program, on 600 records committed at once. See lab-server/runner/throughput.ts.
  throughput: { baseline: 'baseline.ts', records: 600, minSpeedup: 5 },
  faults: {
    // A batched program commits rarely, so a kill at 'after:commit' always lands between the
    // transaction and an offset commit made outside it; 'after:send' catches auto-commit.
    full: [
      { kind: 'kill', at: ['after:send', 'before:commit'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'stop', at: ['after:send'] },
      { kind: 'zombie', at: ['after:send', 'after:sendOffsets'] },
      { kind: 'send-error', at: ['before:send'] },
      { kind: 'broker-restart' },
    ],
    quick: [
      { kind: 'kill', at: ['after:send'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'send-error', at: ['before:send'] },
    ],
  },
  checks: [
    'throughput-speedup',
    'no-loss',
    'no-duplicates',
    'no-aborted-reads',
    'transform-correct',
    'order-preserved',
    'offsets-consistent',
    'no-hanging-transactions',
    'keeps-up',
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 240_000,
  quickTimeLimitMs: 120_000,
});
