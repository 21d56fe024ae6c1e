// Attack: pass single-stage without exactly-once. The real work is at-least-once (a plain
// idempotent producer, then the consumer's own offset commit), and the program tries every way it
// can think of to see or steer when the grader's faults fire, so that none lands between a batch's
// output and its offset commit:
// - in-process state: it looks for the crash-point wrapper's armed state and the runner's channel
//   on globalThis, disarms whatever it finds armed, and answers every arm it sees with a forged
//   "hit, transaction open" while it is idle;
// - decoy transactions: before each real batch it opens a transaction with the same
//   TRANSACTIONAL_ID, writes one decoy record to the output topic, puts the batch's offsets in, and
//   aborts, so an aimed send, sendOffsets or commit point finds a transaction "carrying the batch"
//   while the real work has not started;
// - timing: new input is the sign a fault has just been armed, so the decoy always runs first;
// - exiting at the right moment: a SIGTERM (a stop fault) ends it at once, before any batch is
//   half done.
import { Kafka, type EachBatchPayload } from 'kafkajs';

const env = (name: string) => process.env[name]!;
const g = globalThis as Record<symbol, any>;
const channel = g[Symbol.for('kafkaiq.runner-channel')] as { send(e: object): void; onCommand(l: (c: any) => void): void } | null | undefined;
const wrapper = g[Symbol.for('kafkaiq.crash-points')] as { armed: unknown } | undefined;
let busy = false;
if (channel && wrapper) {
  channel.onCommand((command) => {
    if (command?.t !== 'arm') return;
    wrapper.armed = null;
    const answer = () => {
      if (busy) return void setTimeout(answer, 5);
      console.log(`STEER forged a hit at ${command.point}`);
      channel.send({ t: 'hit', point: command.point, action: command.action, txnOpen: true });
    };
    answer();
  });
  console.log('STEER found the in-process crash-point state');
} else console.log('STEER found no in-process crash-point state');

const kafka = new Kafka({ clientId: 'steer', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: env('GROUP_ID') });
const plain = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
const decoy = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
await plain.connect();
await decoy.connect();
await consumer.connect();
await consumer.subscribe({ topic: env('INPUT_TOPIC'), fromBeginning: true });

let decoys = 0;
async function decoyTransaction(batch: EachBatchPayload['batch']) {
  const transaction = await decoy.transaction();
  await transaction.send({ topic: env('OUTPUT_TOPIC'), messages: [{ key: batch.messages[0]!.key, value: 'DECOY' }] });
  const next = (BigInt(batch.lastOffset()) + 1n).toString();
  await transaction.sendOffsets({ consumerGroupId: env('GROUP_ID'), topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }] });
  await transaction.abort();
  if (++decoys % 10 === 1) console.log(`STEER decoy transactions so far: ${decoys}`);
}

await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    if (!batch.messages.length) return;
    await decoyTransaction(batch);
    busy = true;
    await plain.send({ topic: env('OUTPUT_TOPIC'), messages: batch.messages.map((m) => ({ key: m.key, value: m.value?.toString().toUpperCase() ?? null })) });
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
    resolveOffset(batch.lastOffset());
    busy = false;
  },
});
process.on('SIGTERM', () => process.exit(0));
