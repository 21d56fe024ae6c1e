import type { Admin } from 'kafkajs';
import { retry } from '../core/retry.ts';

export interface CommittedOffset {
  partition: number;
  /** The next offset the group will read; -1 when it has committed nothing on this partition. */
  offset: number;
}

/** kafkajs marks broker errors worth another try (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, ...). */
export function isRetriableKafkaError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { retriable?: unknown }).retriable === true;
}

/**
 * How the grader retries its own Kafka requests: retriable answers only, for up to ~15 s (a
 * coordinator reloading after a restart, a killed node's partitions still moving).
 */
export const GRADER_KAFKA_RETRY = { retries: 10, minDelayMs: 200, maxDelayMs: 2_000, shouldRetry: isRetriableKafkaError } as const;

/**
 * A group's committed offsets on one topic, as the grader reads them. kafkajs's admin sends the
 * OffsetFetch once: after a broker restart the group coordinator answers
 * COORDINATOR_LOAD_IN_PROGRESS until it has reloaded __consumer_offsets, which must not end a
 * grade as an error, so retriable answers are retried here for up to ~15 s.
 */
export async function fetchCommittedOffsets(admin: Admin, groupId: string, topic: string): Promise<CommittedOffset[]> {
  const [offsets] = await retry(() => admin.fetchOffsets({ groupId, topics: [topic] }), GRADER_KAFKA_RETRY);
  return (offsets?.partitions ?? []).map((p) => ({ partition: p.partition, offset: Number(p.offset) }));
}
