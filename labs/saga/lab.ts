import { defineLab, type SeedRecord } from '../../src/shared/lab.ts';

// ---- the orders the grader writes --------------------------------------------------------------

const SKUS = ['SKU-ANVIL', 'SKU-BOLT', 'SKU-CRANK', 'SKU-DOWEL', 'SKU-EYELET', 'SKU-FLANGE'];
const GOOD_CARDS = ['tok_visa', 'tok_mastercard', 'tok_amex'];

/**
 * The card an order is paid with: about half are declined by the card service (402), so
 * most batches hold sagas of both endings. A pure function of the index: the grader knows them.
 */
const cardOf = (index: number) =>
  index % 5 === 1 || index % 5 === 3 ? 'tok_declined' : index % 7 === 3 ? 'tok_insufficient_funds' : GOOD_CARDS[index % GOOD_CARDS.length]!;
const DECLINED = new Set(['tok_declined', 'tok_insufficient_funds']);

/** One order per input record; the orderId carries the seeding index, so every order is unique. */
const orderValue = (index: number, key: string): string =>
  JSON.stringify({
    orderId: `ord-${String(index).padStart(5, '0')}`,
    customer: key,
    sku: SKUS[(index * 5) % SKUS.length],
    quantity: 1 + ((index * 3) % 4),
    unitPriceCents: 250 + ((index * 13) % 12) * 50,
    card: cardOf(index),
  });

interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
  card: string;
}

const order = (input: SeedRecord) => JSON.parse(input.value) as Order;
const declined = (o: Order) => DECLINED.has(o.card);

export default defineLab({
  title: 'An orchestrated saga: every order completed or fully compensated',
  summary:
    'Read every order of ORDERS_TOPIC and run its saga against two services at API_URL: reserve the stock (POST /inventory/reservations), ' +
    'then charge the card (POST /charges). A charged order is completed; a declined card (402) means the reservation must be released ' +
    '(POST /inventory/releases) and the order cancelled. Write one event per order to EVENTS_TOPIC, keyed by orderId, in a Kafka transaction ' +
    'with the input offsets. The grader kills your orchestrator right after a service answered, right after your commit, makes the services slow, ' +
    'answer 503, or apply a step and never answer; then it reads every saga from the services\' records: each one completed (reserved once, ' +
    'charged once) or compensated (reserved once, released once, never charged). ' +
    'Example: {"orderId":"ord-00003","customer":"k003","sku":"SKU-DOWEL","quantity":2,"unitPriceCents":400,"card":"tok_declined"} is reserved, ' +
    'declined, released, and gives the event {"type":"OrderCancelled","orderId":"ord-00003","reason":"card_declined"}; ' +
    '{"orderId":"ord-00002",...,"quantity":3,"unitPriceCents":350,"card":"tok_amex"} is reserved, charged 1050 and gives {"type":"OrderCompleted","orderId":"ord-00002","amountCents":1050}.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'ORDERS_TOPIC',
      description:
        'Orders to run a saga for (3 partitions), keyed by customer. Each value is compact JSON: ' +
        '{"orderId":"ord-00002","customer":"k002","sku":"SKU-EYELET","quantity":3,"unitPriceCents":350,"card":"tok_amex"}. ' +
        'Some were written in aborted transactions and must start no saga.',
    },
    {
      name: 'EVENTS_TOPIC',
      description:
        'One event per order (3 partitions), key = orderId, value = compact JSON with fields in this order: ' +
        '{"type":"OrderCompleted","orderId":"ord-00002","amountCents":1050} for a charged order (amountCents = quantity * unitPriceCents), ' +
        '{"type":"OrderCancelled","orderId":"ord-00003","reason":"card_declined"} for a compensated one.',
    },
    {
      name: 'API_URL',
      description:
        'Base URL of this attempt\'s services, no trailing slash. POST API_URL/inventory/reservations {"orderId","sku","quantity"}: 201, the stock is held. ' +
        'POST API_URL/charges {"orderId","amountCents","card"}: 201 charged, or 402 {"error":"card_declined"} and nothing charged. ' +
        'POST API_URL/inventory/releases {"orderId","sku","quantity"}: 200, one hold given back (nothing held: a no-op, still 200). ' +
        'Every endpoint honours an Idempotency-Key header: the same key and body again gets the stored answer (Idempotent-Replayed: true) and changes nothing; ' +
        'the same key with another body is a 422; a key whose first request is still being processed is a 409. Without a key, every call is applied: ' +
        'two reservations hold the stock twice.',
    },
    { name: 'GROUP_ID', description: 'Consumer group id to use' },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id for your producer; the same on every restart of this instance' },
  ],
  topics: [
    { name: 'orders', env: 'ORDERS_TOPIC', partitions: 3, role: 'input', description: 'Orders as JSON, keyed by customer' },
    { name: 'events', env: 'EVENTS_TOPIC', partitions: 3, role: 'output', description: 'OrderCompleted or OrderCancelled per order, keyed by orderId' },
  ],
  seeds: [{ topic: 'orders', records: 120, keys: 12, transactionSize: 5, abortEvery: 4, value: orderValue }],
  transform: (input) => {
    const o = order(input);
    const value = declined(o)
      ? JSON.stringify({ type: 'OrderCancelled', orderId: o.orderId, reason: 'card_declined' })
      : JSON.stringify({ type: 'OrderCompleted', orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents });
    return [{ topic: 'events', key: o.orderId, value }];
  },
  api: {
    service: 'saga',
    env: 'API_URL',
    what: 'saga step',
    // The steps each committed order's saga must apply exactly once, with these bodies.
    effects: (input) => {
      const o = order(input);
      const stock = { orderId: o.orderId, sku: o.sku, quantity: o.quantity };
      return [
        { id: `reserve:${o.orderId}`, body: stock },
        declined(o)
          ? { id: `release:${o.orderId}`, body: stock }
          : { id: `charge:${o.orderId}`, body: { orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents, card: o.card } },
      ];
    },
    faults: {
      // As in http-idempotency: longer than a sensible per-attempt client timeout (1-2 s), so a
      // retry meets the first request still in progress (409) before the stored answer.
      slowMs: 2_000,
      slowCalls: 2,
      errorStatus: 503,
      errorCalls: 2,
      timeoutHoldMs: 10_000,
    },
  },
  faults: {
    // kill after:http: a step is applied and answered, the saga's event is not committed: the
    // restart runs the saga again from its first step (its steps must be recognised as repeats:
    // no key, and the stock is held twice). On the 2nd call after arming: inside the batch's first
    // saga; on the 4th: in its second saga, after the first one ended (an event published outside
    // the transaction is out). kill before:http aimed at /inventory/releases: a compensation about
    // to be sent. Inside the batch the restart runs it again; one left for after the commit (in
    // memory) is never run, whatever the batch held besides. kill after:commit: the sagas are
    // ended. before:http: a saga before its first call. after:send: the first event is written,
    // the batch not committed (an event published outside the transaction is out).
    // api-timeout: a step applied, its answer lost (a new key per retry applies it twice);
    // api-error: 503, nothing applied (a program that gives up loses the step).
    full: [
      { kind: 'kill', at: ['after:http'], occurrence: 2 },
      { kind: 'kill', at: ['after:http'], occurrence: 4 },
      { kind: 'kill', at: ['before:http'], path: '/inventory/releases' },
      { kind: 'kill', at: ['before:http', 'after:commit'] },
      { kind: 'kill', at: ['after:send'] },
      { kind: 'api-timeout' },
      { kind: 'api-error' },
      { kind: 'api-slow' },
    ],
    quick: [
      { kind: 'kill', at: ['after:http'], occurrence: 4 },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'kill', at: ['before:http'], path: '/inventory/releases' },
      { kind: 'kill', at: ['after:send'] },
      { kind: 'api-timeout' },
      { kind: 'api-error' },
    ],
  },
  checks: [
    'saga-outcome',
    'no-duplicate-effects',
    'no-lost-effects',
    'effects-correct',
    'no-loss',
    'no-duplicates',
    'no-aborted-reads',
    'transform-correct',
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 120_000,
  quickTimeLimitMs: 60_000,
});
