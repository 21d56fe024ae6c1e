/**
 * A broker restart asked for through the control endpoint (what another KafkaIQ process on the
 * same broker does) waits for the owning process's grades: their shared maintenance leases (while
 * they seed or verify) hold it back, and its duration counts as their downtime. On a broker of its
 * own (port 9692), owned by this test process, reached through its control file like a second
 * process would.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectCluster, type KafkaCluster } from '../lab-server/broker/cluster.ts';
import { isKafkaAt } from '../lab-server/broker/probes.ts';
import { maintenanceFor } from '../lab-server/broker/maintenance.ts';

const PORT = 9692;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-control-'));
let owned: KafkaCluster;

beforeAll(async () => {
  owned = await connectCluster({ basePort: PORT, dataDir, external: '' });
  expect(owned.origin).toBe('started');
}, 120_000);

afterAll(async () => {
  await owned?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('a restart through the control endpoint', () => {
  it("waits for the owner's shared leases, and counts as the owner's downtime", async () => {
    // What a second process gets: the control endpoint found through the control file.
    const remote = await connectCluster({ basePort: PORT, dataDir, external: `127.0.0.1:${PORT}` });
    expect(remote.control).not.toBeNull();
    const lock = maintenanceFor(owned.brokers);
    const downtimeBefore = lock.downtimeMs;

    let restarted = false;
    let restart: Promise<void> = Promise.resolve();
    // A connection open across the restart: the broker closes it when its server stops.
    const socket = net.connect(PORT, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const closedAt = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    let leaseEndedAt = 0;
    await lock.withShared(async () => {
      restart = remote.control!.restart().then(() => void (restarted = true));
      // Inside the lease the broker stays up and answers, however long we take.
      await sleep(2_000);
      expect(restarted).toBe(false);
      expect(lock.isDown).toBe(true); // the restart is queued: new shared sections wait for it
      expect(await isKafkaAt(owned.brokers[0]!)).toBe(true);
      leaseEndedAt = Date.now();
    });
    await restart;
    expect(restarted).toBe(true);
    expect(await isKafkaAt(owned.brokers[0]!)).toBe(true);
    // The downtime counted is the restart's own section: it began once the lease ended, and the
    // broker went down (closed the connection) inside it.
    const downtime = lock.downtimeMs - downtimeBefore;
    expect(lock.lastDowntimeBeganAt).toBeGreaterThanOrEqual(leaseEndedAt);
    expect(downtime).toBe(lock.lastDowntimeEndedAt - lock.lastDowntimeBeganAt);
    const wentDown = await closedAt;
    expect(wentDown).toBeGreaterThanOrEqual(lock.lastDowntimeBeganAt);
    expect(wentDown).toBeLessThanOrEqual(lock.lastDowntimeEndedAt);
  }, 120_000);
});
