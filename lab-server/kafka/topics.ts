/** Creating and deleting an attempt's topics: the one copy every attempt kind (and throughput) uses. */
import type { Admin, ITopicConfig, Kafka } from 'kafkajs';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { retry } from '../core/retry.ts';
import { withAdmin } from './client.ts';

/**
 * What one attempt may hold on the cluster. Attempt users cannot create topics at all (no CREATE
 * ACL); these bound what the grader creates for them from a lab definition: a topic count and a
 * partition total per call (an attempt makes one call, a throughput lab one more for its lanes),
 * and retention.bytes on every partition so no attempt can fill the broker's disk.
 */
export const ATTEMPT_TOPIC_LIMITS = { topics: 32, partitions: 128, retentionBytes: 64 * 1024 * 1024 };

/**
 * Creates the topics (waiting for their leaders). Right after a broker restart the metadata can
 * lag for a moment: retry, then give up clearly (an infrastructure error, never the learner's).
 */
export async function createTopics<T = void>(kafka: Kafka, requested: ITopicConfig[], then?: (admin: Admin) => Promise<T>): Promise<T> {
  const partitions = requested.reduce((n, t) => n + Math.max(1, t.numPartitions ?? 1), 0);
  if (requested.length > ATTEMPT_TOPIC_LIMITS.topics || partitions > ATTEMPT_TOPIC_LIMITS.partitions) {
    throw new KafkaIqError(
      'LAB_INVALID',
      `An attempt may have at most ${ATTEMPT_TOPIC_LIMITS.topics} topics and ${ATTEMPT_TOPIC_LIMITS.partitions} partitions; this lab asks for ${requested.length} topics and ${partitions} partitions: make its topics fewer or smaller.`,
    );
  }
  const topics = requested.map((t) => ({
    ...t,
    configEntries: [
      ...(t.configEntries ?? []),
      ...(t.configEntries?.some((c) => c.name === 'retention.bytes') ? [] : [{ name: 'retention.bytes', value: String(ATTEMPT_TOPIC_LIMITS.retentionBytes) }]),
    ],
  }));
  try {
    return await withAdmin(kafka, async (admin) => {
      await retry(() => admin.createTopics({ waitForLeaders: true, topics }), {
        retries: 6,
        minDelayMs: 250,
        maxDelayMs: 2_000,
        shouldRetry: (err) => !/already exists/i.test(describeError(err)),
      });
      // A retry after a creation whose leader wait failed finds the topics there and returns at
      // once, so wait here until the broker serves every partition (a busy broker's metadata lags).
      await retry(() => requireLeaders(admin, topics.map((t) => t.topic)), { retries: 8, minDelayMs: 100, maxDelayMs: 1_000 });
      return (await then?.(admin)) as T;
    });
  } catch (err) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `Kafka did not accept the lab topics (${describeError(err)}): is the broker running? Start it with 'npm run broker'.`, { cause: err });
  }
}

async function requireLeaders(admin: Admin, topics: string[]): Promise<void> {
  const { topics: found } = await admin.fetchTopicMetadata({ topics });
  const missing = topics.filter((name) => {
    const topic = found.find((t) => t.name === name);
    return !topic || topic.partitions.length === 0 || topic.partitions.some((p) => p.leader < 0);
  });
  if (missing.length) throw new KafkaIqError('BROKER_UNREACHABLE', `no leader yet for ${missing.join(', ')}`);
}

/** Deletes topics, best effort: already gone, or the broker is down, is nothing a learner can act on. */
export async function deleteTopics(kafka: Kafka, topics: string[], timeout = 10_000): Promise<void> {
  await bestEffort(`delete topics ${topics.join(', ')}`, withAdmin(kafka, (admin) => admin.deleteTopics({ topics, timeout })));
}
