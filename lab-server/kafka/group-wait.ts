/** Waits the grader makes on the cluster and on a consumer group before it injects a fault. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import { withAdmin } from './client.ts';

/** Waits (at most 180 s) until the cluster's metadata lists `want` brokers. */
export async function waitForBrokers(kafka: Kafka, want: number): Promise<void> {
  const deadline = Date.now() + 180_000;
  await withAdmin(kafka, async (admin) => {
    while (Date.now() < deadline) {
      // A broker that does not answer yet is one more reason to ask again.
      const { brokers } = await admin.describeCluster().catch(() => ({ brokers: [] as unknown[] }));
      if (brokers.length >= want) return;
      await sleep(500);
    }
  });
}

/**
 * Waits until the group is Stable with `wanted()` members. False if it did not get there in time;
 * null if the broker could not be asked (it may be restarting).
 */
export async function waitForStableGroup(kafka: Kafka, groupId: string, wanted: () => number, timeoutMs: number): Promise<boolean | null> {
  const until = Date.now() + Math.max(0, timeoutMs);
  try {
    return await withAdmin(kafka, async (admin) => {
      while (Date.now() < until) {
        // A group being rebalanced or a coordinator moving answers later: ask again.
        const { groups } = await admin.describeGroups([groupId]).catch(() => ({ groups: [] as { state: string; members: unknown[] }[] }));
        if (groups[0]?.state === 'Stable' && groups[0].members.length === wanted()) return true;
        await sleep(150);
      }
      return false;
    });
  } catch {
    // The broker may be restarting: the caller goes on anyway.
    return null;
  }
}
