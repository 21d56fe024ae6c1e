import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { createKafka, withAdmin, withClient } from './client.ts';
import { COORDINATOR_TYPES, createInternalCluster } from './internal-cluster.ts';
import { TRANSACTION_STATE_TOPIC } from './transaction-log.ts';

// kafkajs's admin has no FindCoordinator for transactions; its internal Cluster sends it (the
// producer uses the same call).

export interface TransactionCoordinator {
  /** The broker (node id) that coordinates the transactional id's transactions right now. */
  nodeId: number;
  /** Its partition of __transaction_state. */
  partition: number;
  /** How we know: the broker's own FindCoordinator answer, or the partition's leader in the metadata. */
  source: 'find-coordinator' | 'metadata';
}

/** Java's String.hashCode, which Kafka uses to place a transactional id. */
export function javaStringHash(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  return hash;
}

/** Kafka's TransactionStateManager.partitionFor: Utils.abs(id.hashCode) % partitions. */
export function transactionStatePartition(transactionalId: string, partitions: number): number {
  const hash = javaStringHash(transactionalId);
  const abs = hash === -2147483648 ? 0 : Math.abs(hash);
  return abs % partitions;
}

/**
 * Which broker is the transaction coordinator of `transactionalId`. Asks the cluster
 * (FindCoordinator with key type TRANSACTION, as a producer would), and checks the answer against
 * the metadata: the coordinator is the leader of the id's partition of __transaction_state. When
 * both are available and disagree (leadership is moving), the metadata wins, because it is what
 * the controller decided last; when FindCoordinator fails, the metadata alone answers.
 */
export async function findTransactionCoordinator(brokers: string[], transactionalId: string): Promise<TransactionCoordinator> {
  let metadataError: unknown = 'no leader in the metadata';
  const [asked, fromMetadata] = await Promise.all([
    // Unanswered, the metadata alone decides (below).
    askFindCoordinator(brokers, transactionalId).catch(() => null),
    leaderFromMetadata(brokers, transactionalId).catch((err: unknown) => {
      metadataError = err;
      return null;
    }),
  ]);
  if (fromMetadata) return asked === fromMetadata.nodeId ? { ...fromMetadata, source: 'find-coordinator' } : fromMetadata;
  if (asked !== null) return { nodeId: asked, partition: -1, source: 'find-coordinator' };
  throw new KafkaIqError('BROKER_UNREACHABLE', `Could not find the transaction coordinator of ${transactionalId}: ${describeError(metadataError)}`);
}

async function askFindCoordinator(brokers: string[], transactionalId: string): Promise<number> {
  const cluster = createInternalCluster(brokers, {
    clientId: 'kafkaiq-coordinator',
    connectionTimeout: 2_000,
    requestTimeout: 5_000,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 500 },
  });
  return withClient(cluster, async () => {
    // FindCoordinator goes to any known broker: learn them all first (connect knows only the seed).
    await cluster.refreshMetadata();
    const { coordinator } = await cluster.findGroupCoordinatorMetadata({ groupId: transactionalId, coordinatorType: COORDINATOR_TYPES.TRANSACTION });
    return Number(coordinator.nodeId);
  });
}

function leaderFromMetadata(brokers: string[], transactionalId: string): Promise<TransactionCoordinator | null> {
  const kafka = createKafka(brokers, 'kafkaiq-coordinator', { retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 500 } });
  return withAdmin(kafka, async (admin) => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [TRANSACTION_STATE_TOPIC] });
    const partitions = topics[0]?.partitions ?? [];
    if (!partitions.length) return null;
    const partition = transactionStatePartition(transactionalId, partitions.length);
    const leader = partitions.find((p) => p.partitionId === partition)?.leader;
    return leader === undefined || leader < 0 ? null : { nodeId: leader, partition, source: 'metadata' as const };
  });
}

/**
 * Waits until every partition of the cluster has all its replicas in sync again (a restarted
 * node catches up in a few seconds), so that the next node loss still leaves min.insync.replicas
 * replicas everywhere. Resolves false if that did not happen in time.
 */
export async function waitForFullIsr(brokers: string[], timeoutMs: number): Promise<boolean> {
  const kafka = createKafka(brokers, 'kafkaiq-isr', { retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 } });
  const deadline = Date.now() + timeoutMs;
  return withAdmin(
    kafka,
    async (admin) => {
      for (;;) {
        try {
          // Connecting is retried here too: the seed it picks may be the node that is still starting.
          await admin.connect();
          const { topics } = await admin.fetchTopicMetadata();
          if (topics.every((t) => t.partitions.every((p) => p.isr.length >= p.replicas.length))) return true;
        } catch {
          // a node still starting, or metadata moving: ask again
        }
        if (Date.now() > deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
    { connect: false },
  );
}
