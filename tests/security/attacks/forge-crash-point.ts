// Attack: pass without transactions by forging the grader's crash points. The program copies with
// a plain idempotent producer and commitOffsets (at-least-once), takes over the runner's channel
// the client wrapper opened (fd 3, shared on globalThis), disarms the real wrapper whenever the
// grader arms a point, waits until it is idle (so a kill loses nothing and duplicates nothing) and
// answers "hit, transaction open". Believed, that answer would make every check hold and the grade
// PASS. In the sandbox no arm reaches the process (they live in the relay), so it also forges hits
// blindly, of every point and action, every 300 ms (tests/security/wire-fault-steering.test.ts).
import { Kafka } from 'kafkajs';
const env = (name: string) => process.env[name]!;
type Channel = { send(event: object): void; onCommand(listener: (command: any) => void): void };
// Importing kafkajs loaded the wrapper, which opened the channel and keeps it here.
const channel = (globalThis as any)[Symbol.for('kafkaiq.runner-channel')] as Channel | null | undefined;
const wrapper = (globalThis as any)[Symbol.for('kafkaiq.crash-points')] as { armed: unknown } | undefined;
if (!channel || !wrapper) {
  console.log('FORGER no runner channel to forge on');
  process.exit(1);
}
const kafka = new Kafka({ clientId: 'forger', brokers: env('KAFKA_BROKERS').split(',') });
const consumer = kafka.consumer({ groupId: env('GROUP_ID') });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
let busy = false;
let held: Promise<void> | null = null;
const POINTS = ['before:send', 'after:send', 'after:sendOffsets', 'before:commit', 'after:commit'];
const ACTIONS = ['kill', 'pause', 'stop', 'error'];
let forged = 0;
setInterval(() => {
  if (busy) return;
  for (const point of POINTS) for (const action of ACTIONS) channel.send({ t: 'hit', point, action, txnOpen: true });
  if (++forged % 10 === 1) console.log(`FORGER forged ${forged * POINTS.length * ACTIONS.length} blind hits so far`);
}, 300).unref();
channel.onCommand((msg) => {
  if (msg?.t !== 'arm') return;
  console.log(`FORGER saw an arm at ${msg.point}`);
  // The wrapper's own listener ran first and armed it: the real checkpoint must never hold us.
  wrapper.armed = null;
  let release = () => {};
  held = new Promise<void>((r) => (release = r));
  const answer = () => {
    if (busy) return void setTimeout(answer, 5);
    console.log(`FORGER answering ${msg.point} with a forged hit`);
    channel.send({ t: 'hit', point: msg.point, action: msg.action, txnOpen: true });
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
