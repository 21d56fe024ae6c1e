import { defineLab } from '../../src/shared/lab.ts';

// A new lab, scaffolded by `npx kafkaiq new`. It starts as a working copy of the `copy` lab so
// `npx kafkaiq check <id>` passes before you change anything; see AUTHORING.md for every field.
export default defineLab({
  title: 'TODO: a title learners will see',
  summary: 'TODO: one or two sentences saying exactly what the program must do and what "exactly once" means here.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers' },
    { name: 'INPUT_TOPIC', description: 'Topic to read (1 partition); some records were written in aborted transactions' },
    { name: 'OUTPUT_TOPIC', description: 'Topic to write to (1 partition)' },
    { name: 'GROUP_ID', description: 'Consumer group id' },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id, the same on every restart' },
  ],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 1, role: 'input', description: 'Keyed text records' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 1, role: 'output', description: 'The expected transform of each committed input' },
  ],
  seeds: [{ topic: 'input', records: 200, keys: 8, transactionSize: 10, abortEvery: 4 }],
  // The lab's function: which outputs each committed input must produce.
  transform: (input) => [{ topic: 'output', key: input.key, value: input.value }],
  // The faults catch the broken variants copied from the copy lab, each on its named check, in
  // both plans (a plan without a zombie lets broken/random-transactional-id pass). Keep each fault
  // a variant needs when you change them: `npx kafkaiq check <id>` and the coverage rule say which.
  faults: {
    full: [
      { kind: 'kill', at: ['after:send', 'before:commit'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'stop', at: ['after:send'] },
      { kind: 'zombie', at: ['after:send'] },
      { kind: 'broker-restart' },
    ],
    quick: [
      { kind: 'kill', at: ['after:send'] },
      { kind: 'kill', at: ['after:commit'] },
      { kind: 'zombie', at: ['after:send'] },
    ],
  },
  checks: ['no-loss', 'no-duplicates', 'no-aborted-reads', 'transform-correct', 'order-preserved', 'offsets-consistent', 'no-hanging-transactions', 'keeps-up'],
  checkCoverage: [
    {
      check: 'keeps-up',
      coverage: 'none',
      reason: 'no send-error fault: only a broker restart can fail a transaction, and only by timing; any later kill, stop or zombie restarts the program',
    },
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 120_000,
  quickTimeLimitMs: 45_000,
});
