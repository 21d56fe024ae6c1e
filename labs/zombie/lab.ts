import { defineLab, type SeedRecord } from '../../src/shared/lab.ts';

// ---- the readings the grader writes ------------------------------------------------------------
// One temperature reading per record, from twelve sensors (the keys). The reading id carries the
// seeding index, so every value is unique.

const celsiusOf = (index: number): number => ((index * 7) % 45) - 10; // -10 .. 34

const readingValue = (index: number, key: string): string => `r-${String(index).padStart(5, '0')} sensor=${key} celsius=${celsiusOf(index)}`;

/** `r-00003 sensor=k003 celsius=11` becomes `r-00003 sensor=k003 fahrenheit=51.8`. */
const toFahrenheit = (input: SeedRecord) => {
  const [id, sensor, celsius] = input.value.split(' ');
  const c = Number(celsius!.slice('celsius='.length));
  return [{ topic: 'output', key: input.key, value: `${id} ${sensor} fahrenheit=${((c * 9) / 5 + 32).toFixed(1)}` }];
};

export default defineLab({
  title: 'Zombie fencing: one transactional.id per input partition',
  summary:
    'Three instances of your program share one consumer group over the 6 partitions of INPUT_TOPIC. Convert every reading ' +
    '"r-00003 sensor=k003 celsius=11" to "r-00003 sensor=k003 fahrenheit=51.8" (celsius × 9 / 5 + 32, toFixed(1)), same key, ' +
    'to OUTPUT_TOPIC, with the input offsets in the same transaction. The grader freezes an instance in the middle of a ' +
    'transaction until the group has handed its partitions to the others and they have redone its batch, then wakes it up: ' +
    'its transaction must not commit. kafkajs cannot reject it by group generation (it has no KIP-447), so fence it through ' +
    'the transactional.id: one per input partition, derived from TRANSACTIONAL_ID_PREFIX and shared by all instances.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'INPUT_TOPIC',
      description:
        'Topic to read (6 partitions), keyed by sensor (k000 … k011). Value: "r-<reading> sensor=<key> celsius=<integer>", ' +
        'e.g. "r-00003 sensor=k003 celsius=11". Some records were written in aborted transactions and must have no effect.',
    },
    {
      name: 'OUTPUT_TOPIC',
      description:
        'Output (6 partitions), same key as the input. Value: the same text with "celsius=<c>" replaced by ' +
        '"fahrenheit=<(c * 9 / 5 + 32).toFixed(1)>", e.g. "r-00003 sensor=k003 fahrenheit=51.8"',
    },
    { name: 'GROUP_ID', description: 'Consumer group id, the same for every instance' },
    {
      name: 'TRANSACTIONAL_ID_PREFIX',
      description:
        'The same for every instance. Build one transactional.id per input partition from it, exactly `${TRANSACTIONAL_ID_PREFIX}-${INPUT_TOPIC}-${partition}` (the ids your program is allowed): ' +
        'whichever instance owns partition 4 uses the same id for it, so a new owner fences the old one',
    },
    { name: 'INSTANCE_ID', description: 'Which instance this is (i1, i2, i3, …), for your log lines' },
    {
      name: 'TRANSACTIONAL_ID',
      description: 'A transactional.id for this instance alone (the same on every restart of it). Enough for one instance; think about what it fences when partitions move',
    },
  ],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 6, role: 'input', description: 'Temperature readings in °C, keyed by sensor' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 6, role: 'output', description: 'The same readings in °F' },
  ],
  // Twelve records per seeding transaction, two for each of the 6 partitions: every wave gives every
  // instance work when a fault is armed on it. Twelve transactions make the twelve waves of the
  // full plan (a warm-up, a wave per fault, spares); the aborted one (the 11th) comes after every
  // wave that a fault or its "after a send" fallback can use.
  seeds: [{ topic: 'input', records: 144, keys: 12, transactionSize: 12, abortEvery: 11, value: readingValue }],
  transform: toFahrenheit,
  instances: 3,
  faults: {
    // pause: frozen at the crash point (a transaction open, its records sent) past the session
    // timeout, no replacement; the other instances take its partitions over and commit the same
    // records, then it wakes up. Only the transactional.id of the partition can fence it.
    // The second pause freezes an instance between two transactions (right after a commit): a
    // program whose frozen transaction the broker simply expires (a short transactionTimeout)
    // still wakes up with stale batches and commits them under an id nobody fenced.
    // kill at after:commit: catches offsets committed outside the transaction.
    full: [
      { kind: 'pause', at: ['after:send', 'after:sendOffsets'], instance: 1 },
      { kind: 'pause', at: ['after:commit'], instance: 2 },
      { kind: 'kill', at: ['after:commit'], instance: 3 },
      { kind: 'kill', at: ['after:send', 'before:commit'], instance: 1 },
      { kind: 'join' },
    ],
    quick: [
      { kind: 'pause', at: ['after:send', 'after:sendOffsets'], instance: 1 },
      { kind: 'kill', at: ['after:commit'], instance: 2 },
    ],
  },
  checks: ['no-loss', 'no-duplicates', 'no-aborted-reads', 'transform-correct', 'order-preserved', 'offsets-consistent', 'no-hanging-transactions', 'keeps-up'],
  checkCoverage: [
    {
      check: 'keeps-up',
      coverage: 'none',
      reason:
        'each fault hits one of several instances: one wedged by its own error handling leaves the group or times out, and the others take its partitions (a keeps-fenced-producer variant passed: quick seeds 1, 2, full 1)',
    },
    {
      check: 'order-preserved',
      coverage: 'none',
      reason:
        'each wave gives a partition one reading per sensor, in sensor order, consumed before the next: grouping or sorting a batch by sensor, the realistic reorderings, change nothing (graded, 3 seeds pass)',
    },
  ],
  // No producer transactionTimeout here: kafkajs's 60 s default keeps a frozen transaction open
  // until its instance wakes up, as a long GC pause would in production.
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 120_000,
  quickTimeLimitMs: 60_000,
});
