/**
 * Grader features multi-stage labs rely on, on the real broker: a crash point aimed at the stage
 * that writes one topic (FaultSpec.topic), and outputs matched with their input by origin (running
 * totals), so a double-counted order is a duplicate and a wrong total a transform error.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testBrokers } from './support/brokers.ts';
import type { Admin } from 'kafkajs';
import { pipelineLabSchema, type SeedRecord } from '../src/shared/lab.ts';
import { compileProgram } from '../lab-server/runner/program/compile.ts';
import { ProgramInstance } from '../lab-server/runner/program/program-instance.ts';
import type { ChildEvent } from '../lab-server/runner/program/child/protocol.ts';
import { runCheckers } from '../lab-server/runner/checkers/index.ts';
import { readLogStarts, readPipelineOutput } from '../lab-server/runner/collect/pipeline-output.ts';
import type { SeededRecord } from '../lab-server/runner/seeder.ts';
import { testKafka, testProgramSaslEnv, uniqueName } from './support/kafka.ts';

const kafka = testKafka('multi-stage-grading');
const brokers = testBrokers();
let admin: Admin;

async function newTopic(prefix: string, partitions = 1) {
  const topic = uniqueName(prefix);
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  return topic;
}

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
});

afterAll(async () => {
  await admin.disconnect();
});

// Two "stages" in one process: each round commits a transaction to topic A, then one to topic B.
const TWO_STAGES = `
import { Kafka } from 'kafkajs';
const kafka = new Kafka({ clientId: 'two-stages', brokers: process.env.KAFKA_BROKERS!.split(',') });
const producer = kafka.producer({ transactionalId: process.env.TX!, idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
await new Promise((r) => setTimeout(r, 800)); // the test arms its crash point meanwhile
for (let round = 0; round < 3; round++) {
  for (const [name, topic] of [['A', process.env.TOPIC_A!], ['B', process.env.TOPIC_B!]]) {
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ key: 'k', value: name + round }] });
    try {
      await txn.commit();
      console.log('committed ' + name + round);
    } catch {
      console.log('commit failed ' + name + round);
      await txn.abort().catch(() => {});
    }
  }
}
await producer.disconnect();
`;

async function runArmed(topicFilter: 'A' | 'B' | null): Promise<{ lines: string[]; hits: ChildEvent[]; committedBeforeHit: string[] | null }> {
  const topics = { A: await newTopic('stage-a'), B: await newTopic('stage-b') };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-test-'));
  const compiled = await compileProgram(TWO_STAGES, dir);
  const instance = new ProgramInstance('i1', 1, { kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: dir }, {
    KAFKA_BROKERS: brokers.join(','),
    ...testProgramSaslEnv(),
    TOPIC_A: topics.A,
    TOPIC_B: topics.B,
    TX: uniqueName('two-stages-tx'),
  });
  const lines: string[] = [];
  const hits: ChildEvent[] = [];
  /** The commits the program had reported when the armed commit was held. */
  let committedBeforeHit: string[] | null = null;
  const commits = () => lines.filter((l) => /^commit/.test(l));
  instance.on('line', (_stream, line) => lines.push(line));
  instance.on('event', (e) => {
    if (e.t !== 'hit') return;
    hits.push(e);
    committedBeforeHit = commits();
    // Held before the broker sees it (wherever the arm lives); let it go on.
    setTimeout(() => instance.send({ t: 'continue' }), 200);
  });
  await new Promise((r) => setTimeout(r, 150));
  instance.send({ t: 'arm', point: 'before:commit', action: 'pause', occurrence: 1, ...(topicFilter ? { topic: topics[topicFilter] } : {}) });
  await instance.exited;
  fs.rmSync(dir, { recursive: true, force: true });
  return { lines: commits(), hits, committedBeforeHit };
}

describe('crash points aimed at one stage', () => {
  it('without a topic, the first commit of any transaction is hit', async () => {
    const { lines, hits, committedBeforeHit } = await runArmed(null);
    expect(hits).toHaveLength(1);
    expect(committedBeforeHit).toEqual([]);
    expect(lines).toEqual(['committed A0', 'committed B0', 'committed A1', 'committed B1', 'committed A2', 'committed B2']);
  }, 30_000);

  it('with a topic, only a transaction that wrote to it is hit', async () => {
    const { lines, hits, committedBeforeHit } = await runArmed('B');
    expect(hits).toHaveLength(1);
    expect(committedBeforeHit, "held at B0's commit, after A0's went through").toEqual(['committed A0']);
    expect(lines).toHaveLength(6);
  }, 30_000);
});

describe('outputs matched by origin', () => {
  it('tells duplicates, wrong totals, aborted reads and losses apart for running totals', async () => {
    const input = await newTopic('totals-in');
    const output = await newTopic('totals-out');
    // Orders o1..o4: o1, o2, o3 committed (o1, o2 for k1; o3 for k2), o4 aborted (k2).
    const order = (index: number, key: string, committed: boolean): SeededRecord => ({
      topic: 'in',
      partition: 0,
      key,
      value: JSON.stringify({ orderId: `o${index}`, amount: 10 * index }),
      index,
      committed,
      offset: index,
    });
    const inputs = [order(1, 'k1', true), order(2, 'k1', true), order(3, 'k2', true), order(4, 'k2', false)];
    const total = (orderId: string, count: number, amount: number) => JSON.stringify({ orderId, count, amount });
    const lab = pipelineLabSchema.parse({
      title: 'running totals',
      summary: 'count and amount per key, one output per order',
      env: [{ name: 'KAFKA_BROKERS', description: 'x' }],
      topics: [
        { name: 'in', env: 'IN', partitions: 1, role: 'input', description: 'orders' },
        { name: 'out', env: 'OUT', partitions: 1, role: 'output', description: 'totals' },
      ],
      seeds: [{ topic: 'in', records: 6 }],
      transform: (r: SeedRecord, { committed }: { committed: readonly SeedRecord[] }) => {
        const mine = committed.filter((c) => c.key === r.key && c.index < r.index).concat(r);
        const amount = mine.reduce((n, c) => n + (JSON.parse(c.value) as { amount: number }).amount, 0);
        return [{ topic: 'out', key: r.key, value: total((JSON.parse(r.value) as { orderId: string }).orderId, mine.length, amount) }];
      },
      origin: (o: { value: string }) => (JSON.parse(o.value) as { orderId?: string }).orderId ?? null,
      faults: { full: [{ kind: 'kill' }], quick: [{ kind: 'kill' }] },
      checks: ['no-loss', 'no-duplicates', 'no-aborted-reads', 'transform-correct'],
    });

    const producer = kafka.producer({ transactionalId: uniqueName('totals-writer'), idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send({
      topic: output,
      messages: [
        { key: 'k1', value: total('o1', 1, 10) },
        { key: 'k1', value: total('o2', 2, 30) },
        { key: 'k1', value: total('o2', 3, 50) }, // o2 counted a second time
        { key: 'k2', value: total('o4', 1, 40) }, // from the aborted order; o3's total is missing
      ],
    });
    await txn.commit();
    await producer.disconnect();

    const realTopic = (t: string) => (t === 'in' ? input : output);
    const read = await readPipelineOutput({ kafka, brokers, lab, groupId: uniqueName('no-group'), realTopic });
    const collected = {
      pipeline: { lab, realTopic, inputs, output: read, logStarts: await readLogStarts(brokers, lab, realTopic), database: null, api: null, transactionLog: null, throughput: null },
      monitor: null,
    };
    const history = { namespace: 'ns', startedAt: Date.now(), faults: [], stalls: { stalls: [], boundMs: 12_000, longestMs: 0 }, transactions: null, cutOff: null };
    const checks = runCheckers(['no-duplicates', 'transform-correct', 'no-aborted-reads', 'no-loss'], collected, history);
    const check = (name: string) => checks.find((c) => c.name === name)!;
    expect(check('no-duplicates')).toMatchObject({ passed: false, summary: expect.stringMatching(/^1 duplicate output records \(1 inputs/) });
    expect(check('no-duplicates').evidence[0]).toContain('o2');
    expect(check('transform-correct').passed).toBe(false);
    expect(check('transform-correct').evidence).toHaveLength(1);
    expect(check('transform-correct').evidence[0]).toMatch(/count\W+3.*should be.*count\W+2\W+amount\W+30/);
    expect(check('no-aborted-reads')).toMatchObject({ passed: false, evidence: [expect.stringContaining('aborted input')] });
    expect(check('no-loss').passed).toBe(false);
    expect(check('no-loss').evidence).toEqual([expect.stringContaining('o3')]);
  }, 30_000);
});
