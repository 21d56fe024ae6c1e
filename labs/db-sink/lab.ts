import { defineLab, type SeedRecord } from '../../src/shared/lab.ts';

// ---- the orders the grader writes --------------------------------------------------------------

const SKUS = ['SKU-ANVIL', 'SKU-BOLT', 'SKU-CRANK', 'SKU-DOWEL', 'SKU-EYELET', 'SKU-FLANGE', 'SKU-GASKET'];

/** One order per input record; the orderId carries the seeding index, so every order is unique. */
const orderValue = (index: number, key: string): string =>
  JSON.stringify({
    orderId: `ord-${String(index).padStart(5, '0')}`,
    customer: key,
    sku: SKUS[(index * 5) % SKUS.length],
    quantity: 1 + ((index * 3) % 4),
    unitPriceCents: 200 + ((index * 13) % 16) * 25,
  });

interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
}

/** The row an order must become, as the effects query below renders it. */
const orderRow = (input: SeedRecord) => {
  const o = JSON.parse(input.value) as Order;
  return { id: o.orderId, value: [o.customer, o.sku, o.quantity, o.quantity * o.unitPriceCents].join('|') };
};

export default defineLab({
  title: 'Database sink: every order written to PostgreSQL exactly once',
  summary:
    'Read every order of ORDERS_TOPIC (JSON: {"orderId","customer","sku","quantity","unitPriceCents"}) and write it as ONE row of the ' +
    'table orders in the PostgreSQL database at DATABASE_URL: order_id, customer, sku, quantity and amount_cents = quantity * unitPriceCents. ' +
    'Kafka transactions cannot cover the database: the grader kills your program right after a row is written (and after the database ' +
    'COMMIT) but before the offset commit, and in the other order, then restarts it and counts the rows. Every committed order must have ' +
    'exactly one row, and orders written in aborted transactions none. ' +
    'Example: {"orderId":"ord-00003","customer":"k003","sku":"SKU-BOLT","quantity":2,"unitPriceCents":325} becomes the row ' +
    "('ord-00003', 'k003', 'SKU-BOLT', 2, 650).",
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'ORDERS_TOPIC',
      description:
        'Topic to read (3 partitions), keyed by customer. Each value is an order as compact JSON: ' +
        '{"orderId":"ord-00023","customer":"k011","sku":"SKU-GASKET","quantity":2,"unitPriceCents":425}. ' +
        'Some orders were written in aborted transactions and must leave no row.',
    },
    { name: 'GROUP_ID', description: 'Consumer group id to use' },
    {
      name: 'DATABASE_URL',
      description:
        'PostgreSQL connection string of a database of your own for this run, e.g. postgresql://postgres:<password>@127.0.0.1:41234/postgres ' +
        '(connect with pg: new pg.Client({ connectionString: process.env.DATABASE_URL })). The grader has created the table ' +
        'orders (order_id text NOT NULL, customer text NOT NULL, sku text NOT NULL, quantity integer NOT NULL, amount_cents bigint NOT NULL), ' +
        'with no unique constraint yet. You may add indexes and tables of your own; the grader counts the rows of orders per order_id.',
    },
  ],
  topics: [
    { name: 'orders', env: 'ORDERS_TOPIC', partitions: 3, role: 'input', description: 'Orders as JSON, keyed by customer' },
  ],
  seeds: [{ topic: 'orders', records: 120, keys: 12, transactionSize: 5, abortEvery: 4, value: orderValue }],
  database: {
    schema: `
      CREATE TABLE orders (
        order_id     text    NOT NULL,
        customer     text    NOT NULL,
        sku          text    NOT NULL,
        quantity     integer NOT NULL,
        amount_cents bigint  NOT NULL
      );`,
    // One row per applied effect: the order it is for, and what it says (for effects-correct).
    effects: `SELECT order_id AS id, concat_ws('|', customer, sku, quantity, amount_cents) AS value FROM orders`,
    effect: orderRow,
    what: 'order row',
  },
  faults: {
    // after:db-write lands inside the database transaction (or right after an autocommitted
    // insert), after:db-commit and before:commitOffsets between the database commit and the offset
    // commit (the window of effect-first programs), after:commitOffsets between an offset commit
    // and a database write that comes after it (the window of offsets-first programs).
    full: [
      { kind: 'kill', at: ['after:db-write'] },
      { kind: 'kill', at: ['after:db-commit'] },
      { kind: 'kill', at: ['before:commitOffsets'] },
      { kind: 'kill', at: ['after:commitOffsets'] },
      { kind: 'stop', at: ['after:db-write'] },
      { kind: 'broker-restart' },
      // A second instance joins while input keeps coming: a running program's partitions move,
      // so a position it read only at start-up is stale by the time it is handed one.
      { kind: 'join' },
    ],
    quick: [
      { kind: 'kill', at: ['after:db-write'] },
      { kind: 'kill', at: ['after:db-commit'] },
      { kind: 'kill', at: ['after:commitOffsets'] },
      { kind: 'join' },
    ],
  },
  checks: ['no-duplicate-effects', 'no-lost-effects', 'effects-correct', 'no-aborted-reads'],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 120_000,
  quickTimeLimitMs: 60_000,
});
