/**
 * The grader's broker restart (the broker-restart fault, the workbench's manual restart) stops
 * each node's server cleanly and starts it again inside the same JVM: clients lose their
 * connections and find the committed data again, as after a restarted process. A JVM that has
 * restarted its allowance of times, or that dies during a restart, is replaced by a new one.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokerProcess } from '../lab-server/broker/broker-process.ts';
import { isKafkaAt } from '../lab-server/broker/probes.ts';
import { RESTARTED_LINE } from '../lab-server/broker/restart-in-jvm.ts';
import { createKafka } from '../lab-server/kafka/client.ts';

// A broker of its own, beside the lane's (its port + 12).
const port = Number(process.env.KAFKAIQ_BROKER_PORT ?? 9092) + 12;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-restart-'));
// One restart in place per JVM: the second restart is a new JVM, the third in place again.
const broker = new BrokerProcess({ basePort: port, dataDir, heapMb: 256, restartsPerJvm: 1 });
const kafka = createKafka([`127.0.0.1:${port}`], 'restart-test');
const topic = 'restart-test';

beforeAll(async () => {
  await broker.start();
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
}, 150_000);

afterAll(async () => {
  await broker.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Resolves when the socket is closed by the other end. */
function closedByPeer(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

/** The values of the topic's committed records. */
async function committedValues(): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: `restart-test-${Date.now()}`, readUncommitted: false });
  const values: string[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const done = new Promise<void>((resolve) => {
    void consumer.run({ eachMessage: async ({ message }) => void (values.push(message.value!.toString()), resolve()) });
  });
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 20_000))]);
  await consumer.disconnect();
  return values;
}

describe('a broker restart', () => {
  it('restarts the server inside its JVM: connections close, committed records stay', async () => {
    const producer = kafka.producer({ transactionalId: 'restart-test', idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ value: 'before the restart' }] });
    await txn.commit();
    await producer.disconnect();

    const pid = broker.nodePid(1)!;
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const closed = closedByPeer(socket);
    await broker.restart();
    await closed;
    expect(broker.nodePid(1)).toBe(pid);
    expect(fs.readFileSync(broker.logPath(1), 'utf8')).toContain(RESTARTED_LINE);
    expect(await isKafkaAt(`127.0.0.1:${port}`)).toBe(true);
    expect(await committedValues()).toEqual(['before the restart']);
  }, 120_000);

  it('starts a new JVM once a JVM has restarted its allowance of times, then restarts in place again', async () => {
    const first = broker.nodePid(1)!;
    await broker.restart();
    const second = broker.nodePid(1)!;
    expect(second).not.toBe(first);
    await broker.restart();
    expect(broker.nodePid(1)).toBe(second);
    expect(await committedValues()).toEqual(['before the restart']);
  }, 150_000);

  it('starts a new JVM when the JVM dies during the restart', async () => {
    await broker.restart(); // a new JVM (the allowance is used), so the next restart is in place
    const pid = broker.nodePid(1)!;
    const restart = broker.restart();
    process.kill(pid, 'SIGKILL');
    await restart;
    expect(broker.nodePid(1)).not.toBe(pid);
    expect(await isKafkaAt(`127.0.0.1:${port}`)).toBe(true);
    expect(await committedValues()).toEqual(['before the restart']);
  }, 150_000);
});
