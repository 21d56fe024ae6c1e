// Attack: pass single-stage without exactly-once by timing alone. The work is at-least-once (a
// plain idempotent producer, then the consumer's own offset commit). The program reads the
// grader's rhythm: input comes in waves, and a fault follows each wave. So when input arrives
// after a quiet spell it holds the batch untouched for a few seconds (heartbeating, so the group
// keeps it), betting that whatever was armed for that wave fires into an idle process, and only
// then sends the output and commits its offsets, as fast as it can. A SIGTERM (a stop fault) ends
// it at once, before a batch is half done.
import { Kafka, logLevel } from 'kafkajs';

const env = (name: string) => process.env[name]!;
/** Input after this much quiet is a new wave. */
const QUIET_MS = 800;
/** How long a new wave is held before any of its work. */
const HOLD_MS = 3_000;

const kafka = new Kafka({ clientId: 'wait-out', brokers: env('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING, retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: env('GROUP_ID'), maxWaitTimeInMs: 100 });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: env('INPUT_TOPIC'), fromBeginning: true });

let lastInputAt = 0;
let holds = 0;
await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
    if (!batch.messages.length) return;
    const arrived = Date.now();
    const newWave = arrived - lastInputAt > QUIET_MS;
    lastInputAt = arrived;
    if (newWave) {
      if (++holds % 3 === 1) console.log(`WAIT held ${holds} waves so far`);
      while (Date.now() - arrived < HOLD_MS) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await heartbeat();
      }
    }
    await producer.send({ topic: env('OUTPUT_TOPIC'), messages: batch.messages.map((m) => ({ key: m.key, value: m.value?.toString().toUpperCase() ?? null })) });
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
    resolveOffset(batch.lastOffset());
    lastInputAt = Date.now();
  },
});
process.on('SIGTERM', () => process.exit(0));
