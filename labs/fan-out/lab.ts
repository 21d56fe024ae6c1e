import { defineLab, type SeedRecord } from '../../src/shared/lab.ts';

// ---- the orders the grader writes --------------------------------------------------------------

const SKUS = ['SKU-ANVIL', 'SKU-BOLT', 'SKU-CRANK', 'SKU-DOWEL', 'SKU-EYELET', 'SKU-FLANGE', 'SKU-GASKET'];

/** One order per input record; the orderId carries the seeding index, so every order is unique. */
const orderValue = (index: number, key: string): string =>
  JSON.stringify({
    orderId: `ord-${String(index).padStart(5, '0')}`,
    customer: key,
    sku: SKUS[(index * 3) % SKUS.length],
    quantity: 1 + ((index * 7) % 5),
    unitPriceCents: 150 + ((index * 37) % 20) * 25,
  });

interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
}

// ---- what each order must become ---------------------------------------------------------------
// Compact JSON (JSON.stringify without spacing) with the fields in exactly this order, so the
// grader can compare the learner's output with these strings byte for byte.

const payment = (o: Order) => JSON.stringify({ orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents });
const inventory = (o: Order) => JSON.stringify({ orderId: o.orderId, sku: o.sku, quantity: -o.quantity });
const notification = (o: Order) =>
  JSON.stringify({ orderId: o.orderId, customer: o.customer, text: `Order ${o.orderId} confirmed: ${o.quantity} x ${o.sku}` });

const fanOut = (input: SeedRecord) => {
  const order = JSON.parse(input.value) as Order;
  return [
    { topic: 'payments', key: input.key, value: payment(order) },
    { topic: 'inventory', key: input.key, value: inventory(order) },
    { topic: 'notifications', key: input.key, value: notification(order) },
  ];
};

export default defineLab({
  title: 'Fan-out pipeline: one order, three topics, one transaction',
  summary:
    'Read every order of ORDERS_TOPIC (JSON: {"orderId","customer","sku","quantity","unitPriceCents"}) and write, with the order\'s key, ' +
    'one record to each of PAYMENTS_TOPIC, INVENTORY_TOPIC and NOTIFICATIONS_TOPIC, together with the input offsets, in ONE transaction: ' +
    'all three outputs of an order or none, each exactly once, whatever gets killed. ' +
    'Values are compact JSON (JSON.stringify, no spaces) with fields in this order: ' +
    'payments {"orderId":…,"amountCents":quantity * unitPriceCents}; ' +
    'inventory {"orderId":…,"sku":…,"quantity":-quantity}; ' +
    'notifications {"orderId":…,"customer":…,"text":"Order <orderId> confirmed: <quantity> x <sku>"}. ' +
    'Example: order {"orderId":"ord-00003","customer":"k003","sku":"SKU-CRANK","quantity":2,"unitPriceCents":425} gives ' +
    '{"orderId":"ord-00003","amountCents":850}, {"orderId":"ord-00003","sku":"SKU-CRANK","quantity":-2} and ' +
    '{"orderId":"ord-00003","customer":"k003","text":"Order ord-00003 confirmed: 2 x SKU-CRANK"}.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'ORDERS_TOPIC',
      description:
        'Topic to read (3 partitions), keyed by customer. Each value is an order as compact JSON: ' +
        '{"orderId":"ord-00023","customer":"k011","sku":"SKU-GASKET","quantity":2,"unitPriceCents":425}. ' +
        'Some orders were written in aborted transactions and must have no effect.',
    },
    {
      name: 'PAYMENTS_TOPIC',
      description:
        'Output (3 partitions), same key as the order. Value: {"orderId":<orderId>,"amountCents":<quantity * unitPriceCents>}, ' +
        'e.g. {"orderId":"ord-00023","amountCents":850}',
    },
    {
      name: 'INVENTORY_TOPIC',
      description:
        'Output (3 partitions), same key as the order. Value: {"orderId":<orderId>,"sku":<sku>,"quantity":<minus the quantity>}, ' +
        'e.g. {"orderId":"ord-00023","sku":"SKU-GASKET","quantity":-2}',
    },
    {
      name: 'NOTIFICATIONS_TOPIC',
      description:
        'Output (3 partitions), same key as the order. Value: {"orderId":<orderId>,"customer":<customer>,"text":"Order <orderId> confirmed: <quantity> x <sku>"}, ' +
        'e.g. {"orderId":"ord-00023","customer":"k011","text":"Order ord-00023 confirmed: 2 x SKU-GASKET"}',
    },
    { name: 'GROUP_ID', description: 'Consumer group id to use' },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id for your producer; the same on every restart of this instance' },
  ],
  topics: [
    { name: 'orders', env: 'ORDERS_TOPIC', partitions: 3, role: 'input', description: 'Orders as JSON, keyed by customer' },
    { name: 'payments', env: 'PAYMENTS_TOPIC', partitions: 3, role: 'output', description: 'One payment per order: orderId and amount in cents' },
    { name: 'inventory', env: 'INVENTORY_TOPIC', partitions: 3, role: 'output', description: 'One stock movement per order: orderId, sku, negative quantity' },
    { name: 'notifications', env: 'NOTIFICATIONS_TOPIC', partitions: 3, role: 'output', description: 'One customer notification per order' },
  ],
  seeds: [{ topic: 'orders', records: 150, keys: 12, transactionSize: 5, abortEvery: 4, value: orderValue }],
  transform: fanOut,
  // The fan-out lesson's design: one producer per orders partition (see the single-stage lab).
  kafkaIds: { transactionalIds: [{ name: '{GROUP_ID}-{ORDERS_TOPIC}-{partition}', perPartitionOf: 'orders' }] },
  faults: {
    // With three sends per transaction, 'after:send' on its first or second occurrence stops the
    // program between two of the sends. A kill at 'after:commit' aimed at payments lands right
    // after the first commit of a program that uses one transaction per topic (payments first),
    // before its inventory and notifications: unaimed, it can land after the last of the three and
    // expose nothing, and such a program passed one seed in ten. In a one-transaction program it
    // is every commit, as before. Any kill at 'after:commit' lands between a commit and a separate
    // offset commit.
    full: [
      { kind: 'kill', at: ['after:send'] },
      { kind: 'kill', at: ['after:commit'], topic: 'payments' },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'stop', at: ['after:send'] },
      { kind: 'zombie', at: ['after:send', 'after:sendOffsets'] },
      { kind: 'send-error', at: ['before:send'] },
      { kind: 'broker-restart' },
    ],
    quick: [
      { kind: 'kill', at: ['after:send'] },
      { kind: 'kill', at: ['after:commit'], topic: 'payments' },
      { kind: 'zombie', at: ['after:send', 'after:sendOffsets'] },
      { kind: 'send-error', at: ['before:send'] },
    ],
  },
  checks: [
    'no-loss',
    'no-duplicates',
    'no-aborted-reads',
    'transform-correct',
    'atomic-fan-out',
    'order-preserved',
    'offsets-consistent',
    'no-hanging-transactions',
    'keeps-up',
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 180_000,
  quickTimeLimitMs: 60_000,
});
