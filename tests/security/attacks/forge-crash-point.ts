// Attack: pass without transactions by forging the grader's crash points. The program copies with
// a plain idempotent producer and commitOffsets (at-least-once), reads the grader's "arm" messages
// on its IPC channel, disarms the real wrapper, waits until it is idle (so a kill loses nothing and
// duplicates nothing) and answers "hit, transaction open". Before the broker confirmed hits, every
// check held and the grade said PASS.
import { Kafka } from 'kafkajs';
const env = (name: string) => process.env[name]!;
const kafka = new Kafka({ clientId: 'forger', brokers: env('KAFKA_BROKERS').split(',') });
const consumer = kafka.consumer({ groupId: env('GROUP_ID') });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
let busy = false;
let held: Promise<void> | null = null;
process.on('message', (msg: any) => {
  if (msg?.t !== 'arm') return;
  process.emit('message' as any, { t: 'disarm' } as any); // the real wrapper must never hold us
  let release = () => {};
  held = new Promise<void>((r) => (release = r));
  const answer = () => {
    if (busy) return void setTimeout(answer, 5);
    process.send!({ t: 'hit', point: msg.point, action: msg.action, txnOpen: true });
    // Survived (a stop or an injected error is no kill): carry on.
    setTimeout(() => ((held = null), release()), 1_500);
  };
  answer();
});
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: env('INPUT_TOPIC'), fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    while (held) await held;
    busy = true;
    await producer.send({ topic: env('OUTPUT_TOPIC'), messages: batch.messages.map((m) => ({ key: m.key, value: m.value?.toString().toUpperCase() ?? null })) });
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
    resolveOffset(batch.lastOffset());
    busy = false;
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect().catch(() => {});
  process.exit(0);
});
