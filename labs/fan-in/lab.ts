import { defineLab, type SeedRecord, type TransformContext } from '../../src/shared/lab.ts';

// ---- the orders and payments the grader writes -------------------------------------------------
// Both topics are keyed by order id ("k000", "k001", ...), and every key is used once per topic:
// one order and at most one payment per order id. A key always goes to the same partition number
// in both topics (partition = key number % 3), so the two topics are co-partitioned.
//
// Orders are seeded 8 per transaction and payments 9 per transaction, alternating, so payments
// drift ahead of orders: the first order ids see the order before the payment, later ones the
// payment first. Some seeding transactions of each topic are aborted (a paid order whose order or
// payment was aborted must produce nothing), and the last order ids have no payment at all.

const SKUS = ['SKU-ANVIL', 'SKU-BOLT', 'SKU-CRANK', 'SKU-DOWEL', 'SKU-EYELET', 'SKU-FLANGE', 'SKU-GASKET'];
const METHODS = ['card', 'transfer', 'wallet'];

const keyNumber = (key: string) => Number(key.slice(1));
/** The amount of an order id; its payment pays exactly that. */
const amountOf = (key: string) => 500 + ((keyNumber(key) * 37) % 40) * 25;

const orderValue = (_index: number, key: string): string =>
  JSON.stringify({
    orderId: key,
    customer: `c-${String((keyNumber(key) * 7) % 10).padStart(2, '0')}`,
    sku: SKUS[(keyNumber(key) * 3) % SKUS.length],
    amountCents: amountOf(key),
  });

/** The payment id carries the seeding index, so it is unique even across runs of the plan. */
const paymentValue = (index: number, key: string): string =>
  JSON.stringify({
    paymentId: `pay-${String(index).padStart(5, '0')}`,
    orderId: key,
    amountCents: amountOf(key),
    method: METHODS[index % METHODS.length],
  });

// ---- what the join must produce ----------------------------------------------------------------
// One record per order id whose order AND payment were both committed, keyed by the order id:
// {"orderId":…,"order":<the order as read>,"payment":<the payment as read>}, compact JSON with the
// fields in this order. JSON.stringify of the parsed input values gives exactly these bytes.

const joined = (order: SeedRecord, payment: SeedRecord) =>
  JSON.stringify({ orderId: order.key, order: JSON.parse(order.value), payment: JSON.parse(payment.value) });

/** Committed inputs by "topic/key", built once per grading run. */
const indexes = new WeakMap<readonly SeedRecord[], Map<string, SeedRecord>>();
const committedByKey = ({ committed }: TransformContext) => {
  let index = indexes.get(committed);
  if (!index) {
    index = new Map(committed.map((r) => [`${r.topic}/${r.key}`, r]));
    indexes.set(committed, index);
  }
  return index;
};

/**
 * The joined record is attributed to the half seeded LATER (the higher seeding index): that is the
 * record whose arrival completes the pair, so the grader's evidence names it. For an aborted
 * order or payment the grader asks too, to recognise a join that must not exist: it returns the
 * join with the committed other half, if there is one.
 */
const join = (input: SeedRecord, context: TransformContext) => {
  const index = committedByKey(context);
  const other = index.get(`${input.topic === 'orders' ? 'payments' : 'orders'}/${input.key}`);
  if (!other) return [];
  const committed = index.get(`${input.topic}/${input.key}`)?.index === input.index;
  if (committed && other.index > input.index) return [];
  const [order, payment] = input.topic === 'orders' ? [input, other] : [other, input];
  return [{ topic: 'joined', key: input.key, value: joined(order, payment) }];
};

export default defineLab({
  title: 'Fan-in pipeline: join orders with payments exactly once',
  summary:
    'Join ORDERS_TOPIC with PAYMENTS_TOPIC by key (the order id) and write one record per paid order to OUTPUT_TOPIC, exactly once, ' +
    'whatever gets killed: each transaction carries the joined records and the next offsets of BOTH input partitions. ' +
    'An order may arrive before or after its payment. The waiting halves live in memory and are rebuilt after every restart or rebalance ' +
    'by replaying both partitions from their start: a pair whose halves both lie below the committed offsets was joined before, and newer ' +
    'records wait until both partitions are replayed. Orders or payments from aborted transactions never join. ' +
    'A second instance joins during grading: give partition p of both topics to the same instance, and use one transactional id per partition number. ' +
    'Output: key = the order id, value = compact JSON {"orderId":…,"order":<the order value>,"payment":<the payment value>}, e.g. ' +
    '{"orderId":"k004","order":{"orderId":"k004","customer":"c-08","sku":"SKU-FLANGE","amountCents":1200},' +
    '"payment":{"paymentId":"pay-00012","orderId":"k004","amountCents":1200,"method":"card"}}.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'ORDERS_TOPIC',
      description:
        'Input (3 partitions), keyed by order id. One order per key, as compact JSON: ' +
        '{"orderId":"k004","customer":"c-08","sku":"SKU-FLANGE","amountCents":1200}. ' +
        'Co-partitioned with PAYMENTS_TOPIC: an order id is in the same partition number in both. Some orders were written in aborted transactions.',
    },
    {
      name: 'PAYMENTS_TOPIC',
      description:
        'Input (3 partitions), keyed by the order id it pays. At most one payment per order, as compact JSON: ' +
        '{"paymentId":"pay-00012","orderId":"k004","amountCents":1200,"method":"card"}. ' +
        'It may come before or after its order; some payments were written in aborted transactions.',
    },
    {
      name: 'OUTPUT_TOPIC',
      description:
        'Output (3 partitions): one record per order id whose order and payment are both committed, key = the order id, value = ' +
        'JSON.stringify({ orderId, order: <parsed order>, payment: <parsed payment> }), e.g. ' +
        '{"orderId":"k004","order":{"orderId":"k004",…},"payment":{"paymentId":"pay-00012",…}}',
    },
    {
      name: 'GROUP_ID',
      description:
        'Consumer group id to use, shared by every instance. Build your transactional ids from it, one per join partition: `${GROUP_ID}-join-${partition}` (your program is allowed exactly these ids)',
    },
  ],
  topics: [
    { name: 'orders', env: 'ORDERS_TOPIC', partitions: 3, role: 'input', description: 'Orders as JSON, keyed by order id' },
    { name: 'payments', env: 'PAYMENTS_TOPIC', partitions: 3, role: 'input', description: 'Payments as JSON, keyed by the order id they pay' },
    { name: 'joined', env: 'OUTPUT_TOPIC', partitions: 3, role: 'output', description: 'One joined record per paid order' },
  ],
  seeds: [
    { topic: 'orders', records: 120, keys: 120, transactionSize: 8, abortEvery: 6, value: orderValue },
    { topic: 'payments', records: 108, keys: 108, transactionSize: 9, abortEvery: 4, value: paymentValue },
  ],
  transform: join,
  kafkaIds: { transactionalIds: [{ name: '{GROUP_ID}-join-{partition}', perPartitionOf: 'orders' }] },
  faults: {
    // Payments run ahead of orders, so at every fault some committed payments wait for orders that
    // come later. Each kill or stop then loses those joins for a program that keeps the waiting
    // halves only in memory, and makes a program that replays without the "both halves below the
    // committed offsets" rule write old joins again. The zombie and the joining second instance
    // move join partitions between owners (fencing, rebalance, replay); a default assigner would
    // split orders-p and payments-p between the two instances.
    full: [
      { kind: 'kill', at: ['after:send', 'before:commit'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'stop', at: ['after:send'] },
      { kind: 'zombie', at: ['after:send', 'after:sendOffsets'] },
      { kind: 'join' },
      { kind: 'send-error', at: ['before:send'] },
      { kind: 'broker-restart' },
    ],
    quick: [
      { kind: 'kill', at: ['after:send'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'send-error', at: ['before:send'] },
    ],
  },
  checks: ['no-loss', 'no-duplicates', 'no-aborted-reads', 'transform-correct', 'order-preserved', 'offsets-consistent', 'no-hanging-transactions'],
  checkCoverage: [
    {
      check: 'order-preserved',
      coverage: 'none',
      reason:
        'every key is one order id, used once per topic and seeded in rising order on both topics: grouping or sorting a batch by key, the realistic reorderings, change nothing',
    },
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 240_000,
  quickTimeLimitMs: 120_000,
});
