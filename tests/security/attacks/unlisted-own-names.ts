// Attack: use names inside the attempt's own namespace that the lab never gave it: a transactional
// id and a consumer group built from its own TRANSACTIONAL_ID and GROUP_ID. Under a prefix grant
// both went through (and each new transactional id costs the coordinator memory); the grants are
// now the lab's exact names, so both are refused.
import { Kafka, logLevel } from 'kafkajs';
const answers = new Set<string>();
const kafka = new Kafka({
  clientId: 'attacker',
  brokers: process.env.KAFKA_BROKERS!.split(','),
  retry: { retries: 0 },
  logLevel: logLevel.DEBUG,
  logCreator: () => ({ log }: any) => void (log.error && answers.add(String(log.error))),
});

function refusal(err: any): string {
  const types = new Set<string>();
  const walk = (e: any, depth: number) => {
    if (!e || depth > 4) return;
    if (typeof e.type === 'string') types.add(e.type);
    for (const inner of [...(e.errors ?? []), ...(e.partitions ?? []).map((p: any) => p.error), e.cause, e.originalError]) walk(inner, depth + 1);
  };
  walk(err, 0);
  return [...types].join(',') || String(err?.message ?? err).slice(0, 200);
}

const tries: Record<string, () => Promise<unknown>> = {
  'an unlisted transactional id': async () => {
    const producer = kafka.producer({ transactionalId: `${process.env.TRANSACTIONAL_ID}-extra`, idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
    await producer.connect();
    try {
      await (await producer.transaction()).abort();
    } finally {
      await producer.disconnect().catch(() => {});
    }
  },
  'an unlisted group': async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.setOffsets({ groupId: `${process.env.GROUP_ID}-extra`, topic: process.env.INPUT_TOPIC!, partitions: [{ partition: 0, offset: '0' }] });
    } finally {
      await admin.disconnect().catch(() => {});
    }
  },
};

const refusals: string[] = [];
let allowed = false;
for (const [what, attack] of Object.entries(tries)) {
  try {
    await attack();
    allowed = true;
    console.log(`ALLOWED ${what}`);
  } catch (err) {
    refusals.push(`${what}: ${refusal(err)} ${[...answers].join(' | ')}`);
    answers.clear();
  }
}
console.log('RESULT ' + JSON.stringify({ allowed, refusal: refusals.join('; ') }));
await new Promise(() => {}); // stay up until the test stops the run
