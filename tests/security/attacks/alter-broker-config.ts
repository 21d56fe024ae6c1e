// Attack: change a dynamic broker config (every attempt's topics would lose their data in a second).
import { Kafka, ConfigResourceTypes } from 'kafkajs';
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
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configEntries: [{ name: 'log.retention.ms', value: '1000' }] }] });
});
