/**
 * The broker a KafkaIQ process owns is supervised: a node JVM that dies on its own (kill -9 here)
 * is started again with backoff, its health goes restarting -> up (what the workbench's badge
 * shows), and Kafka answers again with the same data. A node stopped on purpose stays stopped.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BrokerProcess } from '../lab-server/broker/broker-process.ts';
import type { BrokerHealthState } from '../lab-server/broker/health.ts';
import { isKafkaAt } from '../lab-server/broker/probes.ts';

// A broker of its own, beside the shared one (port 9200 + 10 by default here, never 9092).
const port = Number(process.env.KAFKAIQ_BROKER_PORT ?? 9092) + 10;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-supervised-'));
const broker = new BrokerProcess({ basePort: port, dataDir, heapMb: 256 });

afterAll(async () => {
  await broker.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the supervised broker', () => {
  it('comes back by itself after kill -9, and says so', async () => {
    await broker.start();
    const states: BrokerHealthState[] = [];
    const up = new Promise<void>((resolve) =>
      broker.onHealth((state) => {
        states.push(state);
        if (state === 'up') resolve();
      }),
    );
    const pid = broker.nodePid(1)!;
    process.kill(pid, 'SIGKILL');
    await up;
    expect(states).toEqual(['restarting', 'up']);
    expect(broker.nodePid(1)).not.toBe(pid);
    expect(await isKafkaAt(`127.0.0.1:${port}`)).toBe(true);
  }, 150_000);

  it('leaves a node stopped on purpose alone', async () => {
    const states: BrokerHealthState[] = [];
    broker.onHealth((state) => states.push(state));
    await broker.stopNode(1, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(states).toEqual([]);
    expect(broker.isRunning(1)).toBe(false);
  }, 60_000);
});
