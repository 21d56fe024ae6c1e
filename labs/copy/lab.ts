import { defineLab } from '../../src/shared/lab.ts';

// Kafka's own system test (tests/kafkatest/tests/core/transactions_test.py) copies one partition
// transactionally while brokers and copiers are bounced. This lab is that scenario, graded.
// The copier copies up to the end offset it saw at launch and exits; the grader restarts it, like a
// supervisor would. It runs in group mode with the group's metadata (KIP-447), as Kafka's test
// does with use_group_metadata (--input-partition is required, and ignored there): assigned one
// partition (without --group-mode), it asks for its input
// position BEFORE initTransactions, so a frozen zombie woken before the replacement has fenced it
// commits a batch the replacement then copies again (duplicates under the zombie fault). In group
// mode the position is read after initTransactions, whose fencing has already aborted whatever the
// last instance left open. It keeps the tool's 60 s transaction timeout: a zombie is woken only
// once its replacement has committed, which a JVM joining a group with a frozen member in it can
// take 30 s to do, and a zombie whose transaction had timed out would show nothing about fencing.
const COPIER =
  "java -cp 'broker/lib/*' org.apache.kafka.tools.TransactionalMessageCopier --broker-list \"$KAFKA_BROKERS\" " +
  '--input-topic "$INPUT_TOPIC" --input-partition 0 --group-mode --use-group-metadata --output-topic "$OUTPUT_TOPIC" --consumer-group "$GROUP_ID" ' +
  '--transactional-id "$TRANSACTIONAL_ID" --transaction-size 20';
// The session timeout is the one the lab gives kafkajs programs: with the Java default (45 s) a
// restarted pipe waits for its killed predecessor to leave the group before it can read again.
const CONSOLE_PIPE =
  "java -cp 'broker/lib/*' org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server \"$KAFKA_BROKERS\" " +
  '--topic "$INPUT_TOPIC" --group "$GROUP_ID" --from-beginning --formatter-property print.key=true --formatter-property key.separator=: ' +
  '--command-property session.timeout.ms=3000 --command-property heartbeat.interval.ms=300 ' +
  "| java -cp 'broker/lib/*' org.apache.kafka.tools.ConsoleProducer --bootstrap-server \"$KAFKA_BROKERS\" " +
  '--topic "$OUTPUT_TOPIC" --reader-property parse.key=true --reader-property key.separator=:';

// librdkafka, the C client under Python's, Go's and .NET's: an exactly-once copier of our own in
// Python (commands/eos_copier.py), and an at-least-once pipe of two kcat processes, a consumer that
// auto-commits what it has read into a producer, which duplicates whatever it read since its last
// auto-commit when it is killed. Debian's python3-confluent-kafka and kcat.
const PYTHON_COPIER = '/usr/bin/python3 -u labs/copy/commands/eos_copier.py';
// The login goes in a settings file of the sandbox's own /tmp, written by the shell's printf (a
// builtin): a password on kcat's command line would show in every host user's process list.
const KCAT_LOGIN =
  "umask 077 && printf 'security.protocol=%s\\nsasl.mechanisms=%s\\nsasl.username=%s\\nsasl.password=%s\\n' " +
  '"$KAFKA_SECURITY_PROTOCOL" "$KAFKA_SASL_MECHANISM" "$KAFKA_SASL_USERNAME" "$KAFKA_SASL_PASSWORD" > "$TMPDIR/kcat.conf"';
const KCAT_PIPE =
  `${KCAT_LOGIN} && kcat -C -b "$KAFKA_BROKERS" -F "$TMPDIR/kcat.conf" -X auto.offset.reset=earliest -X session.timeout.ms=3000 -X heartbeat.interval.ms=300 ` +
  `-G "$GROUP_ID" -u -q -f '%k:%s\\n' "$INPUT_TOPIC" | kcat -P -b "$KAFKA_BROKERS" -F "$TMPDIR/kcat.conf" -t "$OUTPUT_TOPIC" -K:`;

export default defineLab({
  title: 'Copy a partition exactly once',
  summary:
    "Copy every committed record of INPUT_TOPIC (one partition) to OUTPUT_TOPIC (one partition): same key, same value, same order, each exactly once, with the input offsets committed in the same transaction. It is the scenario of Kafka's own transaction system test.",
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    { name: 'INPUT_TOPIC', description: 'Topic to copy from (1 partition); some records were written in aborted transactions' },
    { name: 'OUTPUT_TOPIC', description: 'Topic to copy to (1 partition)' },
    { name: 'GROUP_ID', description: 'Consumer group whose committed offset records your progress' },
    { name: 'TRANSACTIONAL_ID', description: 'transactional.id for your producer; the same on every restart' },
  ],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 1, role: 'input', description: 'Keyed text records' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 1, role: 'output', description: 'An exact copy of the committed input' },
  ],
  seeds: [{ topic: 'input', records: 200, keys: 8, transactionSize: 10, abortEvery: 4 }],
  transform: (input) => [{ topic: 'output', key: input.key, value: input.value }],
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
      reason:
        "no send-error: only the full plan's broker-restart can fail a transaction, and only by timing; any later kill, stop or zombie restarts the program (a never-aborting variant passed keeps-up, full seeds 1 and 2)",
    },
  ],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 120_000,
  quickTimeLimitMs: 45_000,
  commandFixtures: [
    { name: 'transactional-message-copier', command: COPIER, expect: 'pass' },
    { name: 'console-consumer-to-console-producer', command: CONSOLE_PIPE, expect: 'fail', check: 'no-aborted-reads' },
    { name: 'librdkafka-python-eos-copier', command: PYTHON_COPIER, expect: 'pass' },
    // Its consumer auto-commits what it printed into the pipe, not what the producer wrote, so a
    // kill loses the records in between (no-loss, on either plan); what the last commit did not
    // cover is read again (no-duplicates, on most quick grades, seldom on the full plan).
    { name: 'kcat-auto-commit-pipe', command: KCAT_PIPE, expect: 'fail', check: 'no-loss' },
  ],
});
