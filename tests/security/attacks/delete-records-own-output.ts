// Attack: DeleteRecords on its own output just before verification (the log start moves past the evidence).
import { Kafka } from 'kafkajs';
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
  const admin = kafka.admin();
  await admin.connect();
  await admin.fetchTopicMetadata({ topics: [process.env.OUTPUT_TOPIC!] }); // kafkajs needs the leaders first
  await admin.deleteTopicRecords({ topic: process.env.OUTPUT_TOPIC!, partitions: [{ partition: 0, offset: '-1' }] });
});
