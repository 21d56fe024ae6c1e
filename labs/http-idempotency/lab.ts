import { defineLab, type SeedRecord } from '../../src/shared/lab.ts';

// ---- the payment requests the grader writes ----------------------------------------------------

const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF'];

/**
 * One payment request per input record: exactly the body POST /payments takes. The paymentId
 * carries the seeding index, so every request is unique.
 */
const paymentRequest = (index: number): string =>
  JSON.stringify({
    paymentId: `pay-${String(index).padStart(5, '0')}`,
    amountCents: 500 + ((index * 37) % 40) * 25,
    currency: CURRENCIES[index % CURRENCIES.length],
  });

interface PaymentRequest {
  paymentId: string;
  amountCents: number;
  currency: string;
}

/** The API's answer to a charge (a new one or a replay): compact JSON, fields in this order. */
const confirmation = (p: PaymentRequest) => JSON.stringify({ paymentId: p.paymentId, amountCents: p.amountCents, currency: p.currency, status: 'charged' });

const request = (input: SeedRecord) => JSON.parse(input.value) as PaymentRequest;

export default defineLab({
  title: 'HTTP idempotency keys: charge every payment exactly once',
  summary:
    'Read every payment request of INPUT_TOPIC (JSON {"paymentId","amountCents","currency"}), charge it with POST API_URL/payments (the request as the JSON body), ' +
    'and write the API\'s answer to OUTPUT_TOPIC, keyed by paymentId, in a Kafka transaction together with the input offsets. ' +
    'The grader kills your program right after the API answered and before your transaction commits, makes the API slow, answer 503, ' +
    'or apply a charge and never answer; then it counts the charges the API made: each payment exactly once, none lost. ' +
    'Example: {"paymentId":"pay-00017","amountCents":1225,"currency":"USD"} is charged once and gives the output record key pay-00017, ' +
    'value {"paymentId":"pay-00017","amountCents":1225,"currency":"USD","status":"charged"}.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'INPUT_TOPIC',
      description:
        'Payment requests to charge (3 partitions), keyed by customer. Each value is compact JSON, e.g. {"paymentId":"pay-00017","amountCents":1225,"currency":"USD"}. ' +
        'Some were written in aborted transactions and must never be charged.',
    },
    {
      name: 'OUTPUT_TOPIC',
      description:
        'One confirmation per payment (3 partitions), key = paymentId, value = the body of the API\'s 201 answer, ' +
        'e.g. {"paymentId":"pay-00017","amountCents":1225,"currency":"USD","status":"charged"}',
    },
    {
      name: 'API_URL',
      description:
        'Base URL of the lab\'s payments API for this attempt, no trailing slash, e.g. http://127.0.0.1:41234/a/kiq-3f2a-1. ' +
        'POST API_URL/payments with Content-Type: application/json and the request as body: 201 and the confirmation. ' +
        'It honours an Idempotency-Key header: the same key and body again gets the stored answer (header Idempotent-Replayed: true) and charges nothing; ' +
        'the same key with another body is a 422; a key whose first request is still being processed is a 409. A request without a key is charged every time.',
    },
    { name: 'GROUP_ID', description: 'Consumer group id to use' },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id for your producer; the same on every restart of this instance' },
  ],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 3, role: 'input', description: 'Payment requests as JSON, keyed by customer' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 3, role: 'output', description: 'The API\'s confirmation of each charge, keyed by paymentId' },
  ],
  seeds: [{ topic: 'input', records: 120, keys: 12, transactionSize: 5, abortEvery: 4, value: paymentRequest }],
  transform: (input) => {
    const p = request(input);
    return [{ topic: 'output', key: p.paymentId, value: confirmation(p) }];
  },
  api: {
    service: 'payments',
    env: 'API_URL',
    what: 'charge',
    // Each committed request must be charged exactly once, with its own amount and currency.
    effects: (input) => {
      const p = request(input);
      return [{ id: p.paymentId, body: { paymentId: p.paymentId, amountCents: p.amountCents, currency: p.currency } }];
    },
    faults: {
      // Longer than a sensible per-attempt client timeout (1-2 s here): the client gives up, and
      // its retry finds the first request still in progress (409) before the stored answer.
      slowMs: 2_000,
      slowCalls: 2,
      errorStatus: 503,
      errorCalls: 2,
      timeoutHoldMs: 10_000,
    },
  },
  faults: {
    // kill at after:http: the API has charged and answered, the transaction has not committed, so
    // the batch is charged again after the restart (no key: twice). In the full plan on the second
    // call after arming: often in the middle of a batch, part of which is charged already. before:http / after:commit:
    // a program that commits before it charges has moved past payments it never charged.
    // api-timeout: charged, answer lost, the client retries (a new key each time: twice).
    // api-error: 503, nothing charged (a program that gives up and commits loses the payment).
    full: [
      { kind: 'kill', at: ['after:http'], occurrence: 2 },
      { kind: 'kill', at: ['before:http', 'after:commit'] },
      { kind: 'kill', at: ['after:send', 'after:sendOffsets'] },
      { kind: 'api-timeout' },
      { kind: 'api-error' },
      { kind: 'api-slow' },
    ],
    quick: [
      { kind: 'kill', at: ['after:http'] },
      { kind: 'kill', at: ['before:http', 'after:commit'] },
      { kind: 'api-timeout' },
      { kind: 'api-error' },
    ],
  },
  checks: [
    'no-duplicate-effects',
    'no-lost-effects',
    'effects-correct',
    'no-loss',
    'no-duplicates',
    'no-aborted-reads',
    'transform-correct',
    'offsets-consistent',
    'no-hanging-transactions',
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 120_000,
  quickTimeLimitMs: 60_000,
});
