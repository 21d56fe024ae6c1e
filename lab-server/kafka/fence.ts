/**
 * Fences an ended attempt's transactional ids: the grader sends InitProducerId for each with its
 * own session, which bumps the id's epoch (a producer of the attempt that survived can no longer
 * write with it) and makes the coordinator abort any transaction still open under it (the LSO of
 * the attempt's partitions moves on at once instead of after transaction.timeout.ms). One client
 * for all of them, bounded in time, best effort: the attempt's rights are deleted right after,
 * and the broker expires idle ids anyway (transactional.id.expiration.ms).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError } from '../../src/shared/errors.ts';
import { retry } from '../core/retry.ts';
import { withClient } from './client.ts';
import { isRetriableKafkaError } from './group-offsets.ts';
import { COORDINATOR_TYPES, createInternalCluster } from './internal-cluster.ts';
import { listTransactions } from './transactions.ts';

export interface FenceResult {
  fenced: string[];
  failed: { id: string; error: string }[];
  /** The deadline passed before every id was done. */
  timedOut: boolean;
}

/** Only ids the coordinator knows get fenced (InitProducerId on an unused id would create one); all of them if it cannot say. */
async function idsInUse(brokers: string[], namespace: string, granted: readonly string[]): Promise<string[]> {
  const wanted = new Set(granted);
  try {
    return (await listTransactions(brokers, namespace)).map((t) => t.transactionalId).filter((id) => wanted.has(id));
  } catch {
    // The coordinator's list is unavailable (the broker restarting): every granted id, bounded by the grant.
    return [...granted];
  }
}

export async function fenceTransactionalIds(brokers: string[], namespace: string, granted: readonly string[], deadlineMs = 8_000): Promise<FenceResult> {
  const result: FenceResult = { fenced: [], failed: [], timedOut: false };
  if (!granted.length) return result;
  const started = Date.now();
  const ids = await Promise.race([idsInUse(brokers, namespace, granted), sleep(deadlineMs / 2, [...granted])]);
  if (!ids.length) return result;
  const cluster = createInternalCluster(brokers, { clientId: 'kafkaiq-grader-fence', connectionTimeout: 2_000, requestTimeout: 5_000, retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 } });
  const work = withClient(cluster, async () => {
    for (const id of ids) {
      if (Date.now() - started > deadlineMs) return;
      try {
        // The first answer for an id with an open transaction is CONCURRENT_TRANSACTIONS: the
        // coordinator has begun aborting it and wants the request again once that is done.
        await retry(
          async () => {
            const coordinator = await cluster.findGroupCoordinator({ groupId: id, coordinatorType: COORDINATOR_TYPES.TRANSACTION });
            await coordinator.initProducerId({ transactionalId: id, transactionTimeout: 10_000 });
          },
          { retries: 20, minDelayMs: 50, maxDelayMs: 500, shouldRetry: isRetriableKafkaError, timeoutMs: Math.max(0, deadlineMs - (Date.now() - started)) },
        );
        result.fenced.push(id);
      } catch (err) {
        result.failed.push({ id, error: describeError(err) });
      }
    }
  });
  // Connecting can fail outright (the broker down for another grade's restart): every id not yet
  // done is then not fenced, which the caller logs; an attempt's end never throws for it.
  const done = work.then(
    () => true,
    (err: unknown) => {
      const handled = new Set([...result.fenced, ...result.failed.map((f) => f.id)]);
      for (const id of ids) if (!handled.has(id)) result.failed.push({ id, error: describeError(err) });
      return true;
    },
  );
  const finished = await Promise.race([done, sleep(Math.max(0, deadlineMs - (Date.now() - started)), false, { ref: false })]);
  if (!finished) {
    result.timedOut = true;
    // The work goes on in the background until its own request timeouts; `done` has its outcome.
  }
  return result;
}

/** fenceTransactionalIds at an attempt's end: what it could not fence goes to the operator's log. */
export async function fenceAttempt(brokers: string[], namespace: string, granted: readonly string[]): Promise<void> {
  const result = await fenceTransactionalIds(brokers, namespace, granted);
  if (!result.failed.length && !result.timedOut) return;
  const what = result.failed.slice(0, 3).map((f) => `${f.id}: ${f.error}`).join('; ');
  process.stderr.write(`[kafkaiq] ${namespace}: fenced ${result.fenced.length} transactional id(s)${result.timedOut ? ', then ran out of time' : ''}${what ? `; not fenced: ${what}` : ''}\n`);
}
