/**
 * Quotas: an attempt user producing as fast as it can is throttled to its byte rate, the grader
 * is not; attempt topics keep at most retention.bytes per partition; an attempt cannot hold more
 * than its cap of topics and partitions.
 */
import { describe, expect, inject, it } from 'vitest';
import { ATTEMPT_QUOTAS } from '../../lab-server/broker/server-properties.ts';
import { grantAttempt } from '../../lab-server/kafka/attempt-acls.ts';
import { createKafka, kafkajs } from '../../lab-server/kafka/client.ts';
import { ATTEMPT_TOPIC_LIMITS, createTopics, deleteTopics } from '../../lab-server/kafka/topics.ts';
import { testKafka } from '../support/kafka.ts';
import { namespace } from './tenancy-support.ts';

const brokers = inject('brokers');
const grader = testKafka('tenancy-quotas');
const MB = 1024 * 1024;

async function produceFlat(kafka: ReturnType<typeof createKafka>, topic: string, bytes: number): Promise<number> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const value = Buffer.alloc(100 * 1024, 'x');
  const started = performance.now();
  try {
    for (let sent = 0; sent < bytes; sent += 8 * value.length) {
      await producer.send({ topic, acks: 1, messages: Array.from({ length: 8 }, () => ({ value })) });
    }
  } finally {
    await producer.disconnect();
  }
  return performance.now() - started;
}

describe('quotas and caps per attempt', () => {
  it('throttles an attempt user to its produce rate, never the grader', async () => {
    const ns = namespace('quota');
    const topic = `${ns}-output`;
    await createTopics(grader, [{ topic, numPartitions: 1 }]);
    const identity = await grantAttempt(grader, brokers, { namespace: ns, writeTopics: [topic], expiresAtMs: Date.now() + 600_000 }, topic);
    try {
      const attempt = createKafka(brokers, 'tenancy-quota-attempt', { sasl: { mechanism: 'plain', username: identity.user, password: identity.env.KAFKA_SASL_PASSWORD! } });
      const bytes = 6 * ATTEMPT_QUOTAS.produceBytesPerSecond;
      const graderMs = await produceFlat(grader, topic, bytes);
      const attemptMs = await produceFlat(attempt, topic, bytes);
      // Six seconds' worth of its quota: the broker spreads it over a few seconds at least.
      expect(attemptMs, `grader ${graderMs.toFixed(0)} ms, attempt ${attemptMs.toFixed(0)} ms`).toBeGreaterThan(3_000);
      expect(attemptMs).toBeGreaterThan(2 * graderMs);
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
