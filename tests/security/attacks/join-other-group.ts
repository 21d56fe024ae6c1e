// Attack: join another attempt's consumer group and commit its offsets to the end (its unread
// input would count as processed). kafkajs hides the broker's answer to FindCoordinator behind
// "Failed to find group coordinator", so the answer is taken from its debug log.
import { Kafka, logLevel } from 'kafkajs';
const VICTIM_GROUP = '__VICTIM_NS__-group';
const answers = new Set<string>();
const kafka = new Kafka({
  clientId: 'attacker',
  brokers: process.env.KAFKA_BROKERS!.split(','),
  retry: { retries: 0 },
  logLevel: logLevel.DEBUG,
  logCreator: () => ({ log }: any) => void (log.error && answers.add(String(log.error))),
});

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
  try {
    await admin.setOffsets({ groupId: VICTIM_GROUP, topic: process.env.INPUT_TOPIC!, partitions: [{ partition: 0, offset: '1000000' }] });
  } catch (err) {
    throw new Error(`${(err as Error).message}; the broker said: ${[...answers].join(' | ')}`);
  }
});
