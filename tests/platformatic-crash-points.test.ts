/**
 * The grader's wrapper for @platformatic/kafka (runner/program/child/platformatic-shim.ts), on the real
 * broker: a program compiled as the lab server compiles it (compile.ts maps the import to the
 * wrapper) reports every send, offset commit inside the transaction (addOffset), commit and abort,
 * before and after, with whether a transaction is open; an armed crash point holds the program
 * exactly there (the transaction stays open on the broker) or makes the call fail with this
 * client's own retriable error.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Duplex } from 'node:stream';
import { GRADER_USER, saslEnv } from '../lab-server/kafka/credentials.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testBrokers } from './support/brokers.ts';
import type { Admin } from 'kafkajs';
import { partitionOffsets } from '../lab-server/kafka/inspect.ts';
import { CHANNEL_FD_ENV, type ChildEvent, type RunnerCommand } from '../lab-server/runner/program/child/protocol.ts';
import { compileProgram } from '../lab-server/runner/program/compile.ts';
import { testKafka, uniqueName } from './support/kafka.ts';

const kafka = testKafka('platformatic-crash-points');
const brokers = testBrokers();
let admin: Admin;
let dir: string;
const children: ChildProcess[] = [];

/** Reads INPUT_TOPIC (3 records) in one transaction per record: send, addOffset, then commit, or abort for the second. */
const PROGRAM = `
import { Consumer, Producer, ProtocolError, stringDeserializers, stringSerializers } from '@platformatic/kafka';
const bootstrapBrokers = process.env.KAFKA_BROKERS!.split(',');
const producer = new Producer({ clientId: 'cp', bootstrapBrokers, idempotent: true, transactionalId: process.env.TRANSACTIONAL_ID!, serializers: stringSerializers });
const consumer = new Consumer({ clientId: 'cp', groupId: process.env.GROUP_ID!, bootstrapBrokers, deserializers: stringDeserializers, autocommit: false });
const stream = await consumer.consume({ topics: [process.env.INPUT_TOPIC!], mode: 'earliest', autocommit: false });
let seen = 0;
for await (const m of stream) {
  const index = seen++;
  const txn = await producer.beginTransaction();
  try {
    await txn.send({ messages: [{ topic: process.env.OUTPUT_TOPIC!, key: m.key, value: m.value.toUpperCase(), partition: 0 }] });
    await txn.addConsumer(consumer);
    await txn.addOffset(m);
    if (index === 1) await txn.abort();
    else await txn.commit();
  } catch (err) {
    const e = err as { code?: string; apiId?: string; canRetry?: boolean };
    console.log('caught ' + JSON.stringify({ protocolError: err instanceof ProtocolError, code: e.code, apiId: e.apiId, canRetry: e.canRetry }));
    // Nothing reached the broker: an empty transaction cannot be aborted, only forgotten.
    await txn.abort().catch(() => txn.cancel());
  }
  if (seen === 3) break;
}
console.log('done');
process.exit(0);
`;

async function start(armed?: RunnerCommand) {
  const input = uniqueName('cp-in');
  const output = uniqueName('cp-out');
  await admin.createTopics({ topics: [{ topic: input, numPartitions: 1 }, { topic: output, numPartitions: 1 }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: input, messages: ['a', 'b', 'c'].map((value) => ({ key: 'k', value })) });
  await producer.disconnect();
  const { file } = await compileProgram(PROGRAM, dir);
  const env = { KAFKA_BROKERS: brokers.join(','), INPUT_TOPIC: input, OUTPUT_TOPIC: output, GROUP_ID: uniqueName('cp-group'), TRANSACTIONAL_ID: uniqueName('cp-tx') };
  // As the runner starts it: the grader's channel is a socket pair on fd 3 carrying JSON lines
  // (child/channel.ts), and the login comes through the documented SASL env.
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, ...env, ...saslEnv(GRADER_USER), [CHANNEL_FD_ENV]: '3' },
    stdio: ['ignore', 'pipe', 'inherit', 'pipe'],
  });
  children.push(child);
  const events: ChildEvent[] = [];
  let out = '';
  const channel = child.stdio[3] as Duplex;
  let pending = '';
  channel.setEncoding('utf8');
  channel.on('data', (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
      events.push(JSON.parse(pending.slice(0, nl)) as ChildEvent);
      pending = pending.slice(nl + 1);
    }
  });
  child.stdout!.on('data', (d) => (out += d));
  const send = (command: RunnerCommand) => channel.write(`${JSON.stringify(command)}\n`);
  if (armed) send(armed);
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, events, output: () => out, exited, output_topic: output };
}

const calls = (events: ChildEvent[]) => events.filter((e): e is Extract<ChildEvent, { t: 'call' }> => e.t === 'call').map((e) => `${e.point}${e.txnOpen ? '' : ' (no txn)'}`);

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiq-cp-'));
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await admin.disconnect();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the @platformatic/kafka wrapper', () => {
  it('reports send, addOffset (as sendOffsets), commit and abort, before and after, with the transaction open', async () => {
    const run = await start();
    expect(await run.exited).toBe(0);
    const txn = (end: 'commit' | 'abort') => ['before:send', 'after:send', 'before:sendOffsets', 'after:sendOffsets', `before:${end}`, `after:${end} (no txn)`];
    expect(calls(run.events)).toEqual([...txn('commit'), ...txn('abort'), ...txn('commit')]);
    // A commit names the topics its transaction wrote (a crash point aimed at one stage).
    expect(run.events.find((e) => e.t === 'call' && e.point === 'after:commit')).toMatchObject({ written: [run.output_topic] });
    expect(run.events.find((e) => e.t === 'call' && e.point === 'before:send')).toMatchObject({ records: 1 });
  });

  it('holds the program at an armed crash point, its transaction open on the broker', async () => {
    const run = await start({ t: 'arm', point: 'after:sendOffsets', action: 'kill', occurrence: 1 });
    await expect.poll(() => run.events.some((e) => e.t === 'hit'), { timeout: 30_000 }).toBe(true);
    expect(run.events.find((e) => e.t === 'hit')).toEqual({ t: 'hit', point: 'after:sendOffsets', action: 'kill', txnOpen: true });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(calls(run.events).at(-1)).toBe('after:sendOffsets');
    const [held] = await partitionOffsets(brokers, run.output_topic);
    expect(held!.lso).toBeLessThan(held!.hwm);
    run.child.kill('SIGKILL');
    await run.exited;
  });

  it('makes the call fail with a retriable ProtocolError of this client when armed with an error', async () => {
    const run = await start({ t: 'arm', point: 'before:send', action: 'error', occurrence: 2 });
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain('caught {"protocolError":true,"code":"PLT_KFK_PROTOCOL","apiId":"NOT_LEADER_OR_FOLLOWER","canRetry":true}');
    expect(run.events.filter((e) => e.t === 'hit')).toEqual([{ t: 'hit', point: 'before:send', action: 'error', txnOpen: true }]);
  });
});
