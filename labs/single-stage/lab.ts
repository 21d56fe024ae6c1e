import { defineLab } from '../../src/shared/lab.ts';

// A correct design from outside the course: Kafka Streams under exactly_once_v2 (streams/), run by
// Java's source-file mode against the jars the broker uses. Its producer takes the lab's
// TRANSACTIONAL_ID (the only id the attempt is granted), so a restarted instance fences the
// killed one and aborts its open transaction at once.
const KAFKA_STREAMS =
  "java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp 'broker/lib/*' labs/single-stage/streams/UpperCaseStreams.java";

export default defineLab({
  title: 'Single-stage pipeline: upper-case exactly once',
  summary:
    'Read every record of INPUT_TOPIC, write its value upper-cased with the same key to OUTPUT_TOPIC, and commit the input offsets in the same transaction, so that kills, restarts, a zombie and a broker restart never lose or duplicate a record.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    { name: 'INPUT_TOPIC', description: 'Topic to read (3 partitions). Some of its records were written in aborted transactions.' },
    { name: 'OUTPUT_TOPIC', description: 'Topic to write the upper-cased values to (3 partitions)' },
    { name: 'GROUP_ID', description: 'Consumer group id to use' },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id for your producer; the same on every restart of this instance' },
  ],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 3, role: 'input', description: 'Lower-case text records, keyed' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 3, role: 'output', description: 'The same records, value upper-cased' },
  ],
  seeds: [{ topic: 'input', records: 150, keys: 12, transactionSize: 5, abortEvery: 4 }],
  transform: (input) => [{ topic: 'output', key: input.key, value: input.value.toUpperCase() }],
  // The single-stage lesson's design: one producer per input partition, named after the group, the
  // topic and the partition, so whoever owns the partition next fences the last owner.
  kafkaIds: { transactionalIds: [{ name: '{GROUP_ID}-{INPUT_TOPIC}-{partition}', perPartitionOf: 'input' }] },
  faults: {
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
      { kind: 'zombie', at: ['after:send', 'after:sendOffsets'] },
      { kind: 'send-error', at: ['before:send'] },
    ],
  },
  checks: ['no-loss', 'no-duplicates', 'no-aborted-reads', 'transform-correct', 'order-preserved', 'offsets-consistent', 'no-hanging-transactions', 'keeps-up'],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 120_000,
  quickTimeLimitMs: 45_000,
  commandFixtures: [{ name: 'kafka-streams-exactly-once-v2', command: KAFKA_STREAMS, expect: 'pass' }],
});
