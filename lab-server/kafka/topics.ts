/** Creating and deleting an attempt's topics: the one copy every attempt kind (and throughput) uses. */
import type { Admin, ITopicConfig, Kafka } from 'kafkajs';
import { describeError, KafkaIqError } from '../core/errors.ts';
import { retry } from '../core/retry.ts';

/**
 * Creates the topics (waiting for their leaders). Right after a broker restart the metadata can
 * lag for a moment: retry, then give up clearly (an infrastructure error, never the learner's).
 */
export async function createTopics<T = void>(kafka: Kafka, topics: ITopicConfig[], then?: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await retry(() => admin.createTopics({ waitForLeaders: true, topics }), {
      retries: 6,
      minDelayMs: 250,
      maxDelayMs: 2_000,
      shouldRetry: (err) => !/already exists/i.test(describeError(err)),
    });
    return (await then?.(admin)) as T;
  } catch (err) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `Kafka did not accept the lab topics (${describeError(err)}): is the broker running? Start it with 'npm run broker'.`, { cause: err });
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** Connects an admin client, runs fn, and always disconnects. */
export async function withAdmin<T>(kafka: Kafka, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return await fn(admin);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** Deletes topics, best effort: already gone, or the broker is down, is nothing a learner can act on. */
export async function deleteTopics(kafka: Kafka, topics: string[], timeout = 10_000): Promise<void> {
  await withAdmin(kafka, (admin) => admin.deleteTopics({ topics, timeout })).catch(() => {});
}
