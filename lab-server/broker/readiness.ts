/**
 * When a starting broker is usable: every node registered, a controller elected, and the group
 * and transaction coordinators loaded. Any failure here is BROKER_START_FAILED, the kind of
 * failure the supervisor's crash-loop rule counts (recovery.ts).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { displayPath } from '../core/paths.ts';
import { retry } from '../core/retry.ts';
import { createKafka } from '../kafka/client.ts';

export interface StartingCluster {
  brokers: string[];
  nodeCount: number;
  timeoutMs: number;
  /** Throws when a node's JVM has exited. */
  assertAlive(): void;
  /** The log to name when the start times out. */
  logFile: string;
}

export async function waitUntilReady(cluster: StartingCluster): Promise<void> {
  const deadline = Date.now() + cluster.timeoutMs;
  const kafka = createKafka(cluster.brokers, 'kafkaiq-ready', { connectionTimeout: 1_000, retry: { retries: 0 } });
  const admin = kafka.admin();
  try {
    for (;;) {
      cluster.assertAlive();
      if (Date.now() > deadline) {
        throw new KafkaIqError('BROKER_START_FAILED', `Kafka did not become ready within ${Math.round(cluster.timeoutMs / 1000)} s: see ${displayPath(cluster.logFile)}.`);
      }
      try {
        await admin.connect();
        const described = await admin.describeCluster();
        if (described.brokers.length === cluster.nodeCount && described.controller !== null) break;
      } catch {
        // not up yet
      }
      await sleep(250);
    }
    await warmUpCoordinators(cluster);
  } finally {
    // Readiness is decided: a client that fails to close here has nothing to add to it.
    await admin.disconnect().catch(() => {}); // as the producer's, above
  }
}

/**
 * A fresh broker answers metadata before its group and transaction coordinators have loaded.
 * Touch both now so a learner's first initTransactions/sendOffsets does not meet
 * COORDINATOR_LOAD_IN_PROGRESS (kafkajs does not retry TxnOffsetCommit on it). Loading is also
 * where a poisoned __transaction_state kills a broker: a node that dies meanwhile ends the wait.
 */
async function warmUpCoordinators(cluster: StartingCluster): Promise<void> {
  const kafka = createKafka(cluster.brokers, 'kafkaiq-warmup');
  const admin = kafka.admin();
  // A transactional id of this start's own: the abort below completes asynchronously, and after
  // a restart of every node of a cluster the previous start's abort can wait about 30 s to be
  // written ("Not available to append PendingCompleteTxn"). An InitProducerId on that same id
  // would wait with it.
  const producer = kafka.producer({ transactionalId: `kafkaiq-warmup-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1 });
  try {
    await retry(
      async () => {
        cluster.assertAlive();
        await admin.connect();
        await admin.fetchOffsets({ groupId: 'kafkaiq-warmup', topics: [] });
        await producer.connect();
        const txn = await producer.transaction();
        await txn.sendOffsets({ consumerGroupId: 'kafkaiq-warmup', topics: [] });
        await txn.abort();
      },
      { retries: 40, minDelayMs: 250, maxDelayMs: 1_000, shouldRetry: (err) => !(err instanceof KafkaIqError) },
    );
  } catch (err) {
    if (err instanceof KafkaIqError) throw err;
    throw new KafkaIqError('BROKER_START_FAILED', `Kafka's coordinators did not load (${describeError(err)}): see ${displayPath(cluster.logFile)}.`, { cause: err });
  } finally {
    await producer.disconnect().catch(() => {
      // Readiness is decided: clients that fail to close here have nothing to add to it.
    });
    await admin.disconnect().catch(() => {
      // The same for the admin client.
    });
  }
}

export function readTail(file: string, bytes = 8_192): string {
  try {
    const fd = fs.openSync(file, 'r');
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(bytes, size));
    fs.readSync(fd, buf, 0, buf.length, size - buf.length);
    fs.closeSync(fd);
    return buf.toString('utf8');
  } catch {
    return ''; // no log yet: the message names the file anyway
  }
}

export function lastErrorLine(text: string): string {
  const line = text.split('\n').reverse().find((l) => /ERROR|Exception/.test(l));
  return line ? ` (${line.trim().slice(0, 200)})` : '';
}
