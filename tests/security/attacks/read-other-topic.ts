// Attack: read another attempt's output (read_uncommitted, from the beginning) with our own group.
import { Kafka } from 'kafkajs';
const VICTIM_TOPIC = '__VICTIM_NS__-output';
const kafka = new Kafka({ clientId: 'attacker', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 0 } });

// What the broker answered: every kafkajs error type found in the error and its causes.
function refusal(err: any): string {
  const types = new Set<string>();
  const walk = (e: any, depth: number) => {
    if (!e || depth > 4) return;
    if (typeof e.type === "string") types.add(e.type);
    for (const inner of [...(e.errors ?? []), ...(e.partitions ?? []).map((p: any) => p.error), e.cause, e.originalError]) walk(inner, depth + 1);
  };
  walk(err, 0);
  return [...types].join(",") || String(err?.message ?? err).slice(0, 200);
}
async function report(attack: () => Promise<unknown>): Promise<void> {
  try {
    await attack();
    console.log("RESULT " + JSON.stringify({ allowed: true }));
  } catch (err) {
    console.log("RESULT " + JSON.stringify({ allowed: false, refusal: refusal(err) }));
  }
  await new Promise(() => {}); // stay up until the test stops the run
}

await report(async () => {
  const consumer = kafka.consumer({ groupId: process.env.GROUP_ID!, readUncommitted: true, retry: { retries: 0, restartOnFailure: async () => false } });
  await consumer.connect();
  await consumer.subscribe({ topic: VICTIM_TOPIC, fromBeginning: true });
  const crashed = new Promise((_, reject) => consumer.on(consumer.events.CRASH, (e: any) => reject(e.payload.error)));
  let got = 0;
  await consumer.run({ eachMessage: async () => void got++ });
  await Promise.race([crashed, new Promise((r) => setTimeout(r, 8_000))]);
  if (got === 0) throw new Error('no record read (and no error either)');
});
