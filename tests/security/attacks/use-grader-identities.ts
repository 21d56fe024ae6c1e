// Attack: act as the grader. Its seeding producer's transactional id (InitProducerId would fence
// the seeder mid-grade) and its own consumer groups (joining one takes partitions from the
// grader's reader; committing moves its position past records it never saw). The names are given
// to the attack as if they had leaked; the attempt's grants name none of them.
import { Kafka, logLevel } from 'kafkajs';
const SEEDER_TXN = '__SEEDER_TXN__';
const GRADER_GROUPS = '__GRADER_GROUPS__'.split(',');
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
    if (typeof e.type === 'string') types.add(e.type);
    for (const inner of [...(e.errors ?? []), ...(e.partitions ?? []).map((p: any) => p.error), e.cause, e.originalError]) walk(inner, depth + 1);
  };
  walk(err, 0);
  return [...types].join(',') || String(err?.message ?? err).slice(0, 200);
}

// Every try must be refused; one that goes through is a breach.
const tries: Record<string, () => Promise<unknown>> = {
  'init the seeder id': async () => {
    const producer = kafka.producer({ transactionalId: SEEDER_TXN, idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
    await producer.connect();
    try {
      await (await producer.transaction()).abort();
    } finally {
      await producer.disconnect().catch(() => {});
    }
  },
  ...Object.fromEntries(
    GRADER_GROUPS.flatMap((group) => [
      [
        `commit in ${group}`,
        async () => {
          const admin = kafka.admin();
          await admin.connect();
          try {
            await admin.setOffsets({ groupId: group, topic: process.env.INPUT_TOPIC!, partitions: [{ partition: 0, offset: '1000000' }] });
          } finally {
            await admin.disconnect().catch(() => {});
          }
        },
      ],
      [
        `join ${group}`,
        async () => {
          const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6_000, retry: { retries: 0 } });
          let crashed: (err: unknown) => void = () => {};
          const crash = new Promise((_, reject) => (crashed = reject));
          consumer.on(consumer.events.CRASH, ({ payload }: any) => crashed(payload.error));
          await consumer.connect();
          try {
            await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
            await consumer.run({ eachMessage: async () => {} });
            await Promise.race([crash, new Promise((resolve) => setTimeout(resolve, 8_000))]);
            throw Object.assign(new Error('joined'), { joined: true });
          } finally {
            await consumer.disconnect().catch(() => {});
          }
        },
      ],
    ]),
  ),
};

const refusals: string[] = [];
let allowed = false;
for (const [what, attack] of Object.entries(tries)) {
  try {
    await attack();
    allowed = true;
    console.log(`ALLOWED ${what}`);
  } catch (err) {
    if ((err as any)?.joined) {
      allowed = true;
      console.log(`ALLOWED ${what}`);
      continue;
    }
    const why = refusal(err);
    refusals.push(`${what}: ${why} ${[...answers].join(' | ')}`);
    answers.clear();
    console.log(`REFUSED ${what}: ${why}`);
  }
}
console.log('RESULT ' + JSON.stringify({ allowed, refusal: refusals.join('; ') }));
await new Promise(() => {}); // stay up until the test stops the run
