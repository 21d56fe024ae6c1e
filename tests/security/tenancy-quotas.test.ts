/**
 * Quotas: an attempt user producing as fast as it can is throttled to its byte rate, the grader
 * is not; attempt topics keep at most retention.bytes per partition; an attempt cannot hold more
 * than its cap of topics and partitions.
 */
import { describe, expect, it } from 'vitest';
import { ATTEMPT_QUOTAS } from '../../lab-server/broker/server-properties.ts';
import { grantAttempt } from '../../lab-server/kafka/attempt-acls.ts';
import { createKafka, kafkajs } from '../../lab-server/kafka/client.ts';
import { ATTEMPT_TOPIC_LIMITS, createTopics, deleteTopics } from '../../lab-server/kafka/topics.ts';
import { testKafka } from '../support/kafka.ts';
import { namespace } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();
const grader = testKafka('tenancy-quotas');
// The broker answers a user over its quota with a throttle time (KIP-219), which kafkajs obeys.
const MB = 1024 * 1024;

/** Produces as fast as it can; returns the total throttle time the broker asked for (KIP-219, as kafkajs logs it). */
async function produceFlat(brokersOf: string[], sasl: { mechanism: 'plain'; username: string; password: string } | undefined, topic: string, bytes: number): Promise<number> {
  let throttledMs = 0;
  const kafka = createKafka(brokersOf, 'tenancy-quota', {
    ...(sasl ? { sasl } : {}),
    logLevel: kafkajs.logLevel.DEBUG,
    logCreator: () => ({ log }) => {
      const match = /Client side throttling in effect for (\d+)ms/.exec(String(log.message));
      if (match) throttledMs += Number(match[1]);
    },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const value = Buffer.alloc(100 * 1024, 'x');
  try {
    for (let sent = 0; sent < bytes; sent += 8 * value.length) {
      await producer.send({ topic, acks: 1, messages: Array.from({ length: 8 }, () => ({ value })) });
    }
  } finally {
    await producer.disconnect();
  }
  return throttledMs;
}

describe('quotas and caps per attempt', () => {
  it('throttles an attempt user to its produce rate, never the grader', async () => {
    const ns = namespace('quota');
    const topic = `${ns}-output`;
    await createTopics(grader, [{ topic, numPartitions: 1 }]);
    const identity = await grantAttempt(grader, brokers, { namespace: ns, topics: [topic], writeTopics: [topic], groups: [], transactionalIds: [], expiresAtMs: Date.now() + 600_000 });
    try {
      // The broker measures the rate over its quota window (11 samples of 1 s; a young sensor
      // counts as 10 s old), so it takes more than ten seconds' worth of quota to go over it.
      const bytes = 14 * ATTEMPT_QUOTAS.produceBytesPerSecond;
      // The grader (no sasl given: createKafka's own login) is never throttled.
      const graderThrottled = await produceFlat(brokers, undefined, topic, bytes);
      const attemptThrottled = await produceFlat(brokers, { mechanism: 'plain', username: identity.user, password: identity.env.KAFKA_SASL_PASSWORD! }, topic, bytes);
      // Fourteen seconds' worth of its quota as fast as it goes: the broker holds it back.
      expect(graderThrottled).toBe(0);
      expect(attemptThrottled).toBeGreaterThan(1_000);
    } finally {
      await identity.revoke();
      await deleteTopics(grader, [topic]);
    }
  }, 90_000);

  it('gives attempt topics retention.bytes and refuses more topics or partitions than the cap', async () => {
    const ns = namespace('caps');
    const topic = `${ns}-input`;
    await createTopics(grader, [{ topic, numPartitions: 2 }]);
    const admin = grader.admin();
    await admin.connect();
    try {
      const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.bytes'] }] });
      expect(resources[0]!.configEntries[0]!.configValue).toBe(String(ATTEMPT_TOPIC_LIMITS.retentionBytes));
    } finally {
      await admin.disconnect();
      await deleteTopics(grader, [topic]);
    }
    const many = Array.from({ length: ATTEMPT_TOPIC_LIMITS.topics + 1 }, (_, i) => ({ topic: `${ns}-t${i}`, numPartitions: 1 }));
    await expect(createTopics(grader, many)).rejects.toThrow(/at most 32 topics and 128 partitions/);
    const wide = [{ topic: `${ns}-wide`, numPartitions: ATTEMPT_TOPIC_LIMITS.partitions + 1 }];
    await expect(createTopics(grader, wide)).rejects.toThrow(/at most 32 topics and 128 partitions/);
  });
});
