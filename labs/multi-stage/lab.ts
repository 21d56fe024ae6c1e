import { defineLab, type ExpectedRecord, type SeedRecord } from '../../src/shared/lab.ts';

// ---- the orders the grader writes --------------------------------------------------------------
// Keyed by customer (k000 ... k011). About one order in seven is a test order, spread over all
// customers (7 and 12 have no common factor). The orderId carries the seeding index, so every
// order, and every output, is unique.

interface Order {
  orderId: string;
  customerId: string;
  amount: number;
  status: 'live' | 'test';
}

const orderValue = (index: number, key: string): string =>
  JSON.stringify({
    orderId: `ord-${String(index).padStart(5, '0')}`,
    customerId: key,
    amount: 5 + ((index * 37) % 90),
    status: index % 7 === 3 ? 'test' : 'live',
  } satisfies Order);

// ---- the three stages --------------------------------------------------------------------------

/** Stage 2's fixed customer table: the tier follows from the customer number. */
const tierOf = (customerId: string): string => {
  const n = Number(customerId.slice(1));
  return n <= 2 ? 'gold' : n <= 6 ? 'silver' : 'standard';
};

/** Stage 3's output for one live order, given the customer's running totals including it. */
const totalValue = (order: Order, count: number, amount: number): string =>
  JSON.stringify({ customerId: order.customerId, tier: tierOf(order.customerId), orderId: order.orderId, count, amount });

const parsed = new Map<string, Order>();
const parse = (value: string): Order => {
  let order = parsed.get(value);
  if (!order) parsed.set(value, (order = JSON.parse(value) as Order));
  return order;
};

/**
 * Filter drops test orders; enrich adds the tier; aggregate emits, for every live order, the
 * customer's running count and amount over their committed live orders up to and including this
 * one (per-key order survives the pipeline, since every stage keeps the key). For an aborted order
 * (the grader asks, to recognise outputs that must not exist) the totals are built the same way.
 */
const pipeline = (input: SeedRecord, { committed }: { committed: readonly SeedRecord[] }): ExpectedRecord[] => {
  const order = parse(input.value);
  if (order.status === 'test') return [];
  let count = 0;
  let amount = 0;
  for (const r of committed) {
    if (r.index >= input.index) break; // committed is in seeding order
    if (r.key !== input.key) continue;
    const earlier = parse(r.value);
    if (earlier.status === 'test') continue;
    count += 1;
    amount += earlier.amount;
  }
  return [{ topic: 'totals', key: input.key, value: totalValue(order, count + 1, amount + order.amount) }];
};

/** Every output belongs to one order: its orderId. A total counted twice shows up as a duplicate. */
const originOf = (output: ExpectedRecord): string | null => {
  const orderId = (JSON.parse(output.value) as { orderId?: unknown }).orderId;
  return typeof orderId === 'string' ? orderId : null;
};

export default defineLab({
  title: 'Multi-stage pipeline: filter, enrich and aggregate exactly once',
  summary:
    'Run three exactly-once stages in one program, each with its own consumer group and transactional ids, connected by topics: ' +
    '(1) filter: read the orders of INPUT_TOPIC (JSON {"orderId","customerId","amount","status"}) and pass on, to FILTERED_TOPIC, only those with status "live"; ' +
    '(2) enrich: read FILTERED_TOPIC and write each order to ENRICHED_TOPIC with its customer\'s tier: "gold" for k000-k002, "silver" for k003-k006, "standard" for the rest; ' +
    '(3) aggregate: read ENRICHED_TOPIC and write, for every order, the customer\'s running totals to OUTPUT_TOPIC as compact JSON with fields in this order: ' +
    '{"customerId","tier","orderId","count","amount"}, where count and amount cover the customer\'s live orders up to and including this one. ' +
    'Keep the customer as the key on every hop. The totals are state: keep them in CHANGELOG_TOPIC, written in the same transaction as the output and the offsets, ' +
    'and restore them from it when a stage takes a partition, so that kills, restarts, a zombie and a broker restart never lose or double-count an order. ' +
    'Example: the second live order of k001, {"orderId":"ord-00013","customerId":"k001","amount":36,"status":"live"}, after one of 42, gives ' +
    '{"customerId":"k001","tier":"gold","orderId":"ord-00013","count":2,"amount":78}.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'INPUT_TOPIC',
      description:
        'The orders (3 partitions), keyed by customer, as compact JSON: {"orderId":"ord-00010","customerId":"k010","amount":15,"status":"test"}. ' +
        'status is "live" or "test". Some orders were written in aborted transactions and must have no effect.',
    },
    {
      name: 'FILTERED_TOPIC',
      description: 'Internal (3 partitions): stage 1 writes the live orders here, stage 2 reads them. The record format is yours to choose.',
    },
    {
      name: 'ENRICHED_TOPIC',
      description: 'Internal (3 partitions): stage 2 writes the orders with their tier here, stage 3 reads them. The record format is yours to choose.',
    },
    {
      name: 'CHANGELOG_TOPIC',
      description:
        'Internal (3 partitions, compacted): stage 3\'s state, the latest totals per customer, e.g. key k001, value {"count":2,"amount":78}. ' +
        'Write the totals of ENRICHED_TOPIC partition p to partition p, in the transaction that changes them; read them back with read_committed to restore.',
    },
    {
      name: 'OUTPUT_TOPIC',
      description:
        'The running totals (3 partitions), one record per live order, keyed by customer: ' +
        '{"customerId":"k001","tier":"gold","orderId":"ord-00013","count":2,"amount":78}',
    },
    {
      name: 'GROUP_ID',
      description:
        'Consumer group of stage 1 (the grader checks its offsets on INPUT_TOPIC). Derive the other stages\' groups from it: `${GROUP_ID}-enrich` and `${GROUP_ID}-aggregate` ' +
        '(and `${GROUP_ID}-aggregate-restore-${partition}` to read CHANGELOG_TOPIC back), and every transactional.id too: `${groupId}-${inputTopic}-${partition}`, one producer per stage and input partition. ' +
        'Your program is allowed exactly these names, no others.',
    },
    {
      name: 'TRANSACTIONAL_ID',
      description: 'Names this instance (the same on every restart). One id is not enough for three stages: derive them from GROUP_ID as above.',
    },
  ],
  topics: [
    { name: 'orders', env: 'INPUT_TOPIC', partitions: 3, role: 'input', description: 'Orders as JSON, keyed by customer; some are test orders' },
    { name: 'filtered', env: 'FILTERED_TOPIC', partitions: 3, role: 'internal', description: 'Stage 1 -> stage 2: the live orders' },
    { name: 'enriched', env: 'ENRICHED_TOPIC', partitions: 3, role: 'internal', description: 'Stage 2 -> stage 3: live orders with their tier' },
    {
      name: 'changelog',
      env: 'CHANGELOG_TOPIC',
      partitions: 3,
      role: 'internal',
      description: "Stage 3's totals per customer, one partition per ENRICHED_TOPIC partition",
      config: { 'cleanup.policy': 'compact' },
    },
    { name: 'totals', env: 'OUTPUT_TOPIC', partitions: 3, role: 'output', description: 'Running count and amount per customer, one record per live order' },
  ],
  seeds: [{ topic: 'orders', records: 300, keys: 12, transactionSize: 10, abortEvery: 4, value: orderValue }],
  transform: pipeline,
  origin: originOf,
  kafkaIds: {
    groups: [{ name: '{GROUP_ID}-enrich' }, { name: '{GROUP_ID}-aggregate' }, { name: '{GROUP_ID}-aggregate-restore-{partition}', perPartitionOf: 'changelog' }],
    transactionalIds: [
      { name: '{GROUP_ID}-{INPUT_TOPIC}-{partition}', perPartitionOf: 'orders' },
      { name: '{GROUP_ID}-enrich-{FILTERED_TOPIC}-{partition}', perPartitionOf: 'filtered' },
      { name: '{GROUP_ID}-aggregate-{ENRICHED_TOPIC}-{partition}', perPartitionOf: 'enriched' },
    ],
  },
  faults: {
    // Each crash point is aimed at one stage (`topic`: the stage that writes it), so the window it
    // tests is the same on every seed: the filter stage with its transaction open, the enrich stage
    // right after its commit, the aggregate stage with output and changelog sent but not committed;
    // a failed send in the aggregate stage (its in-memory totals must not keep the failed batch); a
    // zombie in the enrich stage; a broker restart.
    full: [
      { kind: 'kill', at: ['after:send'], topic: 'filtered' },
      { kind: 'kill', at: ['after:commit'], topic: 'enriched' },
      { kind: 'kill', at: ['before:commit'], topic: 'totals' },
      { kind: 'zombie', at: ['after:send', 'after:sendOffsets'], topic: 'enriched' },
      { kind: 'send-error', at: ['before:send'], topic: 'totals' },
      { kind: 'broker-restart' },
    ],
    quick: [
      { kind: 'kill', at: ['after:send'], topic: 'filtered' },
      { kind: 'kill', at: ['before:commit'], topic: 'totals' },
      { kind: 'send-error', at: ['before:send'], topic: 'totals' },
    ],
  },
  checks: ['no-loss', 'no-duplicates', 'no-aborted-reads', 'transform-correct', 'order-preserved', 'offsets-consistent', 'no-hanging-transactions', 'keeps-up'],
  checkCoverage: [
    {
      check: 'keeps-up',
      coverage: 'none',
      reason:
        "the one send-error hits the aggregate stage, and the stall watch counts progress by the filter stage's offsets, which has read all input (never-aborting variant: quick seeds 1, 2 pass, longest pause 0.0 s)",
    },
    {
      check: 'no-hanging-transactions',
      coverage: 'none',
      reason:
        'a stage holding its last transaction open (broken/enrich-commits-when-full) is not caught on every seed: killed near the end, its restart has not reopened it when the work is judged done; no-loss fails',
    },
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 180_000,
  quickTimeLimitMs: 90_000,
});
