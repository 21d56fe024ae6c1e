/**
 * The supervisor of a broker this process owns, on a real broker of its own (KAFKAIQ_BROKER_PORT
 * + 8, never the shared one):
 *  - a broker that still accepts connections but answers nothing (its JVM stopped with SIGSTOP)
 *    is reported down by the health check's metadata request, then killed and started again;
 *  - a broker whose own data kills every start (here a meta.properties naming another node; in
 *    the wild, a __transaction_state too big for the heap) is not restarted forever: after three
 *    failed starts in a row its data is moved to quarantine/ and a fresh broker starts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { BrokerProcess } from '../lab-server/broker/broker-process.ts';
import type { BrokerHealthState } from '../lab-server/broker/health.ts';
import { isKafkaAt, portAnswers } from '../lab-server/broker/probes.ts';
import { CRASH_LOOP } from '../lab-server/broker/recovery.ts';

const port = Number(process.env.KAFKAIQ_BROKER_PORT ?? 9092) + 8;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-recovery-'));
const lines: string[] = [];
const broker = new BrokerProcess({ basePort: port, dataDir, heapMb: 256, log: (l) => void lines.push(l), watchdog: { everyMs: 1_000, deadlineMs: 2_000, killAfterMs: 8_000 } });

afterAll(async () => {
  await broker.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; supervisor said:\n${lines.join('\n')}`);
    await sleep(200);
  }
}

function watchHealth(): BrokerHealthState[] {
  const states: BrokerHealthState[] = [];
  broker.onHealth((state) => void states.push(state));
  return states;
}

describe('the broker supervisor', () => {
  it('reports a broker that accepts but does not answer as down, then kills and restarts it', async () => {
    await broker.start();
    const states = watchHealth();
    const pid = broker.nodePid(1)!;
    process.kill(pid, 'SIGSTOP');
    try {
      await until(() => states.includes('down'), 15_000, 'the health check to say down');
      // What a port probe would have seen: the kernel still completes the handshake.
      expect(await portAnswers(port)).toBe(true);
      await until(() => states.at(-1) === 'up', 150_000, 'the wedged broker to be killed and restarted');
    } finally {
      if (broker.nodePid(1) === pid) process.kill(pid, 'SIGCONT');
    }
    expect(states).toEqual(['down', 'restarting', 'up']);
    expect(broker.nodePid(1)).not.toBe(pid);
    expect(lines.join('\n')).toMatch(/has answered nothing for \d+ s: killing it/);
    expect(await isKafkaAt(`127.0.0.1:${port}`)).toBe(true);
  }, 200_000);

  it(`moves poisoned state aside after ${CRASH_LOOP.failedStarts} failed starts and starts afresh`, async () => {
    // A new life: the crash-loop count starts from zero.
    await broker.stop();
    await broker.start();
    const states = watchHealth();
    const clusterId = fs.readFileSync(path.join(dataDir, 'cluster-id'), 'utf8');
    const meta = path.join(dataDir, 'node-1', 'meta.properties');
    fs.writeFileSync(meta, fs.readFileSync(meta, 'utf8').replace(/^node\.id=1$/m, 'node.id=99'));
    process.kill(broker.nodePid(1)!, 'SIGKILL');
    await until(() => states.at(-1) === 'up', 240_000, 'the poisoned broker to be recovered');
    expect(lines.join('\n')).toMatch(/failed 3 starts in a row: its data is taken as unusable, moved to/);
    const quarantined = fs.readdirSync(path.join(dataDir, 'quarantine'));
    expect(quarantined).toHaveLength(1);
    const kept = path.join(dataDir, 'quarantine', quarantined[0]!);
    expect(fs.readFileSync(path.join(kept, 'node-1', 'meta.properties'), 'utf8')).toMatch(/^node\.id=99$/m);
    expect(fs.readFileSync(path.join(kept, 'cluster-id'), 'utf8')).toBe(clusterId);
    expect(fs.readFileSync(path.join(dataDir, 'cluster-id'), 'utf8')).not.toBe(clusterId);
    expect(fs.readFileSync(meta, 'utf8')).toMatch(/^node\.id=1$/m);
    expect(await isKafkaAt(`127.0.0.1:${port}`)).toBe(true);
  }, 300_000);
});
