// Attack: take another attempt's transactional id (InitProducerId bumps its epoch and fences it).
// kafkajs hides the broker's answer to FindCoordinator behind "Failed to find group coordinator",
// so the answer is taken from its debug log.
import { Kafka, logLevel } from 'kafkajs';
const VICTIM_TXN = '__VICTIM_NS__-tx-1';
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
  // kafkajs refuses an idempotent producer without retries: one, so the broker's answer is what ends it.
  const producer = kafka.producer({ transactionalId: VICTIM_TXN, idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
  try {
    await producer.connect();
    const txn = await producer.transaction();
    await txn.abort();
  } catch (err) {
    throw new Error(`${(err as Error).message}; the broker said: ${[...answers].join(' | ')}`);
  }
});
