import { defineLab, type SeedRecord } from '../../src/shared/lab.ts';

// The outbox lab. The grader writes order commands to COMMANDS_TOPIC (some in aborted
// transactions). The program has two halves, usually in one process:
//
//   (i)  the order service: per command, ONE database transaction writes the order row AND an
//        outbox row describing the event OrderPlaced. A redelivered command changes nothing
//        (the order id is the business key), so the input offsets are committed after the
//        database COMMIT, as in the db-sink lab.
//   (ii) the relay: reads unsent outbox rows in id order, publishes them to EVENTS_TOPIC keyed by
//        the aggregate (the customer) in a Kafka transaction, then marks them sent.
//
// What is checked. The grader reads EVENTS_TOPIC as a read_committed consumer that does NOT
// deduplicate: every committed order's event must be there exactly once (no-loss, no-duplicates,
// matched by the orderId inside the event, see `origin`), with the right key and value
// (transform-correct), in the order the commands had in their partition (order-preserved: a
// customer's commands are all in one partition, so this covers order per aggregate). The database
// must hold exactly one order row per committed command and none for aborted ones (effect checks).
// So a relay killed between the Kafka commit and `UPDATE ... SET sent_at` must not publish the rows
// again: "consumers deduplicate by outbox id" is the lesson's first answer, but here the relay has
// to make publish + mark safe itself (the solution commits its position inside the Kafka
// transaction and reads it back on start-up).
//
// Settling: a lab with a database and an output topic counts as a staged pipeline (see
// lab-attempt.ts), so the grader also waits until no transaction is open on EVENTS_TOPIC and it has
// been quiet for a moment: the relay trails the order service.

const SKUS = ['SKU-ANVIL', 'SKU-BOLT', 'SKU-CRANK', 'SKU-DOWEL', 'SKU-EYELET', 'SKU-FLANGE', 'SKU-GASKET'];
const BASE_MS = Date.UTC(2025, 2, 1, 9, 0, 0);

/**
 * The shop's clock when the order was placed. The shop front-ends' clocks disagree by up to
 * ±3 s, so placedAt does NOT follow the order of the commands (it is no ordering key).
 */
const placedAt = (index: number): string => new Date(BASE_MS + index * 150 + (((index * 37) % 13) - 6) * 500).toISOString();

/** One command per input record; the orderId carries the seeding index, so every order is unique. */
const commandValue = (index: number, key: string): string =>
  JSON.stringify({
    orderId: `ord-${String(index).padStart(5, '0')}`,
    customer: key,
    sku: SKUS[(index * 5) % SKUS.length],
    quantity: 1 + ((index * 3) % 4),
    unitPriceCents: 200 + ((index * 13) % 16) * 25,
    placedAt: placedAt(index),
  });

interface PlaceOrder {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
  placedAt: string;
}

const command = (input: { value: string }) => JSON.parse(input.value) as PlaceOrder;

/** The event an order must produce: exactly this compact JSON, keyed by the customer. */
const eventValue = (c: PlaceOrder): string =>
  JSON.stringify({ type: 'OrderPlaced', orderId: c.orderId, customer: c.customer, amountCents: c.quantity * c.unitPriceCents, placedAt: c.placedAt });

export default defineLab({
  title: 'Transactional outbox: orders and their events, exactly once',
  summary:
    'Read every PlaceOrder command of COMMANDS_TOPIC and, in ONE transaction of the PostgreSQL database at DATABASE_URL, write the order row ' +
    '(table orders) and an outbox row for its event (table outbox); a redelivered command must not add a second order or event. A relay in the ' +
    'same program reads the unsent outbox rows in id order, publishes them to EVENTS_TOPIC keyed by customer in a Kafka transaction, and marks ' +
    'them sent. The grader kills your program after database writes and commits, and between the Kafka commit and the UPDATE that marks the ' +
    'rows sent, then reads EVENTS_TOPIC as a read_committed consumer that does not deduplicate: every committed order must have exactly one ' +
    'row and exactly one event, in the order of its commands per customer. ' +
    'Example: {"orderId":"ord-00003","customer":"k003","sku":"SKU-BOLT","quantity":2,"unitPriceCents":375,"placedAt":"2025-03-01T09:00:00.950Z"} ' +
    "becomes the row ('ord-00003','k003','SKU-BOLT',2,750,'2025-03-01T09:00:00.950Z') and the event key \"k003\" value " +
    '{"type":"OrderPlaced","orderId":"ord-00003","customer":"k003","amountCents":750,"placedAt":"2025-03-01T09:00:00.950Z"}.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'COMMANDS_TOPIC',
      description:
        'Topic to read (3 partitions), keyed by customer. Each value is a PlaceOrder command as compact JSON: ' +
        '{"orderId":"ord-00023","customer":"k011","sku":"SKU-DOWEL","quantity":2,"unitPriceCents":475,"placedAt":"2025-03-01T09:00:03.450Z"}. ' +
        'placedAt is the shop front-end\'s clock: the clocks disagree by seconds, so it does not follow the order of the commands. ' +
        'Some commands were written in aborted transactions and must leave no order and no event.',
    },
    {
      name: 'EVENTS_TOPIC',
      description:
        'Topic the relay publishes to (3 partitions): one record per order, key = the customer (the aggregate), value = exactly ' +
        '{"type":"OrderPlaced","orderId":"ord-00023","customer":"k011","amountCents":950,"placedAt":"2025-03-01T09:00:03.450Z"} ' +
        '(these fields in this order, amountCents = quantity * unitPriceCents). Put the outbox row id in a header "outbox-id" so consumers could deduplicate.',
    },
    { name: 'GROUP_ID', description: 'Consumer group id for reading COMMANDS_TOPIC (and the relay\'s, GROUP_ID + "-relay": your program is allowed exactly these two groups)' },
    { name: 'TRANSACTIONAL_ID', description: "The relay producer's transactional id: the same on every restart of this program" },
    {
      name: 'DATABASE_URL',
      description:
        'PostgreSQL connection string of a database of your own for this run, e.g. postgresql://postgres:<password>@127.0.0.1:41234/postgres ' +
        '(new pg.Client({ connectionString: process.env.DATABASE_URL })). The grader has created the tables ' +
        'orders (order_id text NOT NULL, customer text NOT NULL, sku text NOT NULL, quantity integer NOT NULL, amount_cents bigint NOT NULL, ' +
        'placed_at timestamptz NOT NULL), with no unique constraint yet, and ' +
        'outbox (id bigserial PRIMARY KEY, aggregate_id text NOT NULL, event_type text NOT NULL, payload text NOT NULL, ' +
        'occurred_at timestamptz NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz). ' +
        'You may add indexes and tables of your own; the grader counts the rows of orders per order_id.',
    },
  ],
  topics: [
    { name: 'commands', env: 'COMMANDS_TOPIC', partitions: 3, role: 'input', description: 'PlaceOrder commands as JSON, keyed by customer' },
    { name: 'events', env: 'EVENTS_TOPIC', partitions: 3, role: 'output', description: 'OrderPlaced events published by the relay, keyed by customer' },
  ],
  seeds: [{ topic: 'commands', records: 120, keys: 12, transactionSize: 5, abortEvery: 4, value: commandValue }],
  transform: (input) => {
    const c = command(input);
    return [{ topic: 'events', key: c.customer, value: eventValue(c) }];
  },
  // An event belongs to the order it names: a second event for the same order is a duplicate
  // even if its value differs, and a wrong key or amount is a transform error.
  origin: (output) => {
    const id = (JSON.parse(output.value) as { orderId?: unknown }).orderId;
    return typeof id === 'string' ? id : null;
  },
  database: {
    schema: `
      CREATE TABLE orders (
        order_id     text        NOT NULL,
        customer     text        NOT NULL,
        sku          text        NOT NULL,
        quantity     integer     NOT NULL,
        amount_cents bigint      NOT NULL,
        placed_at    timestamptz NOT NULL
      );
      CREATE TABLE outbox (
        id           bigserial   PRIMARY KEY,
        aggregate_id text        NOT NULL,
        event_type   text        NOT NULL,
        payload      text        NOT NULL,
        occurred_at  timestamptz NOT NULL,
        created_at   timestamptz NOT NULL DEFAULT now(),
        sent_at      timestamptz
      );`,
    effects: `SELECT order_id AS id, concat_ws('|', customer, sku, quantity, amount_cents) AS value FROM orders`,
    effect: (input: SeedRecord) => {
      const c = command(input);
      return { id: c.orderId, value: [c.customer, c.sku, c.quantity, c.quantity * c.unitPriceCents].join('|') };
    },
    what: 'order row',
  },
  kafkaIds: { groups: [{ name: '{GROUP_ID}-relay' }] },
  faults: {
    // Only the order service COMMITs in the database and only the relay uses a Kafka transaction,
    // so each point aims at one half:
    //   after:db-commit  order + outbox rows committed, input offset not: the command is redelivered
    //   after:db-write   inside the order service's transaction (or right after the relay's UPDATE)
    //   after:send       the relay's events sent, its transaction still open (aborted on restart)
    //   before:commit    the same, with the position written too
    //   after:commit     the events committed in Kafka, the rows not yet marked sent
    full: [
      { kind: 'kill', at: ['after:db-commit'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'kill', at: ['after:send'] },
      { kind: 'kill', at: ['after:db-write'] },
      { kind: 'kill', at: ['before:commit'] },
      // No broker-restart: it passes (the relay exits on the error and resumes from its position)
      // but costs ~18 s of a grade, and CI runs the whole matrix.
    ],
    quick: [
      { kind: 'kill', at: ['after:db-commit'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'kill', at: ['after:send'] },
    ],
  },
  checks: [
    'no-loss',
    'no-duplicates',
    'transform-correct',
    'order-preserved',
    'no-duplicate-effects',
    'no-lost-effects',
    'effects-correct',
    'no-aborted-reads',
    'no-hanging-transactions',
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  // A cap for stuck programs, not a target (a correct program took 54-82 s on a loaded machine).
  timeLimitMs: 180_000,
  quickTimeLimitMs: 90_000,
});
