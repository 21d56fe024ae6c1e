/**
 * Sends LeaveGroup for consumers that cannot send it themselves (their process was killed), on
 * behalf of one attempt. The grader is a super user, so what it leaves is decided here, not by the
 * program: only groups the attempt owns (`owns`, its granted groups), each pair once, at most
 * MAX_PAIRS per call, over ONE kafkajs cluster for the whole attempt (created on first use,
 * closed with the attempt) instead of a client per pair.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { MaintenanceLock } from '../broker/maintenance.ts';
import { bestEffort } from '../core/best-effort.ts';
import { createInternalCluster } from './internal-cluster.ts';

/** At most this many pairs per call: a program has a few consumers (supervisor.ts MAX_MEMBERSHIPS). */
export const MAX_PAIRS = 8;

export class GroupEvictor {
  private cluster: any = null;
  private connected: Promise<void> | null = null;
  /** One call at a time: the pairs of two kills never race on the same client. */
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly brokers: string[],
    private readonly owns: (groupId: string) => boolean,
    /** The cluster's restarts: a LeaveGroup waits for one under way to end. */
    private readonly maintenance: Pick<MaintenanceLock, 'isDown' | 'withShared'>,
  ) {}

  /** The pairs this evictor will act on: owned groups only, deduplicated, at most MAX_PAIRS. */
  select(pairs: Iterable<readonly [groupId: string, memberId: string]>): [string, string][] {
    const seen = new Set<string>();
    const chosen: [string, string][] = [];
    for (const [groupId, memberId] of pairs) {
      if (chosen.length >= MAX_PAIRS) break;
      const key = `${groupId}\u0000${memberId}`;
      if (seen.has(key) || !this.owns(groupId)) continue;
      seen.add(key);
      chosen.push([groupId, memberId]);
    }
    return chosen;
  }

  /**
   * Takes the members out of their groups, waiting at most `timeoutMs` (then the session timeout
   * does it). A member the group already dropped is just gone: nothing to report. While a broker
   * restart is under way the LeaveGroups are sent once it ends, and the caller is not held up: a
   * restarted coordinator reloads its groups' members, the dead ones too, and gives each a full
   * session timeout again (45 s for a JVM client's default).
   */
  leave(pairs: Iterable<readonly [groupId: string, memberId: string]>, timeoutMs = 3_000): Promise<void> {
    const chosen = this.select(pairs);
    if (!chosen.length || this.closed) return Promise.resolve();
    const down = this.maintenance.isDown;
    const run = this.tail.then(() => this.maintenance.withShared(async () => {
      if (this.closed) return;
      const cluster = await this.client();
      for (const [groupId, memberId] of chosen) {
        // Already gone (UNKNOWN_MEMBER_ID) is the usual answer after a clean exit: nothing to log.
        await bestEffort(
          `send LeaveGroup for ${groupId}`,
          async () => {
            const coordinator = await cluster.findGroupCoordinator({ groupId });
            await coordinator.leaveGroup({ groupId, memberId });
          },
          () => {},
        );
      }
    }));
    // Each LeaveGroup above is best effort and logs its own failure; the tail only keeps them in order.
    this.tail = run.catch(() => undefined);
    if (down) return Promise.resolve();
    return Promise.race([run.catch(() => undefined /* logged per LeaveGroup, as above */), sleep(timeoutMs, undefined, { ref: false })]);
  }

  private async client(): Promise<any> {
    if (!this.cluster) {
      this.cluster = createInternalCluster(this.brokers, { clientId: 'kafkaiq-grader-evictor', retry: { retries: 2 } });
      this.connected = this.cluster.connect();
    }
    try {
      await this.connected;
    } catch (err) {
      // A broker restart: the next call connects afresh.
      this.cluster = null;
      throw err;
    }
    return this.cluster;
  }

  async close(): Promise<void> {
    this.closed = true;
    const cluster = this.cluster;
    this.cluster = null;
    if (cluster) await bestEffort('disconnect the group evictor', () => cluster.disconnect());
  }
}
