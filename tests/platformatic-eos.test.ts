/**
 * The exactly-once building blocks of tests/eos-primitives.test.ts, proved again with
 * @platformatic/kafka's own producer and read_committed consumer against the pinned broker, plus
 * the one kafkajs cannot give: KIP-447. A zombie whose consumer-group generation is old has its
 * transactional offset commit refused by the group coordinator, even though its transactional.id
 * is its own and nobody fenced it. The broker is only observed through kafkajs's admin (topic
 * creation, committed offsets) and the LSO probe; every read and write under test is the new client's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin } from 'kafkajs';
import { partitionOffsets } from '../lab-server/kafka/inspect.ts';
import { testKafka, uniqueName } from './support/kafka.ts';
import { Connection, initProducerIdV5, offsetFetchV9 } from '@platformatic/kafka';
import { collect, graderLogin, PlatformaticClients, readValues, type StringMessage } from './support/platformatic.ts';
import { testBrokers } from './support/brokers.ts';
import { createTopics } from '../lab-server/kafka/topics.ts';

const kafka = testKafka('platformatic-eos');
const brokers = testBrokers();
const clients = new PlatformaticClients(brokers);
let admin: Admin;

async function newTopic(prefix: string, numPartitions = 1) {
  const topic = uniqueName(prefix);
  // The grader's own helper: it retries while a busy broker's metadata lags behind the creation.
  await createTopics(kafka, [{ topic, numPartitions }]);
  return topic;
}

const committedOffsets = async (groupId: string, topic: string) =>
  (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions.map((p) => p.offset);

/** Writes committed records with a transactional producer of the new client. */
async function seed(topic: string, values: string[], partition = 0) {
  const producer = clients.producer(uniqueName('seed'));
  const txn = await producer.beginTransaction();
  await txn.send({ messages: values.map((value) => ({ topic, key: 'k', value, partition })) });
  await txn.commit();
}

/** What an error says about itself: the broker's error codes sit in `errors[]` of a ProtocolError. */
function describeFailure(err: unknown): string {
  const e = err as { message?: string; code?: string; apiCode?: number; apiId?: string; errors?: unknown[] };
  const nested = (e.errors ?? []).map(describeFailure).join(' ');
  return `${e.code ?? ''} ${e.apiId ?? ''} ${e.message ?? String(err)} ${nested}`;
}

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
});

afterAll(async () => {
  await clients.closeAll();
  await admin.disconnect();
});

describe('@platformatic/kafka transactions on the real broker', () => {
  it('(a) hides an aborted transaction from its read_committed consumer and shows it to read_uncommitted', async () => {
    const topic = await newTopic('pk-abort-visibility');
    const producer = clients.producer(uniqueName('tx-a'));
    const aborted = await producer.beginTransaction();
    await aborted.send({ messages: [{ topic, key: 'k', value: 'aborted-1', partition: 0 }, { topic, key: 'k', value: 'aborted-2', partition: 0 }] });
    await aborted.abort();
    const committed = await producer.beginTransaction();
    await committed.send({ messages: [{ topic, key: 'k', value: 'committed-1', partition: 0 }] });
    await committed.commit();

    expect(await readValues(clients, topic, 'read_committed', { until: 'committed-1' })).toEqual(['committed-1']);
    expect(await readValues(clients, topic, 'read_uncommitted', { until: 'committed-1' })).toEqual(['aborted-1', 'aborted-2', 'committed-1']);
  });

  it('(b) moves the group offset with addOffset only when the transaction commits', async () => {
    const topic = await newTopic('pk-send-offsets');
    const groupId = uniqueName('group-b');
    await seed(topic, ['r0', 'r1', 'r2', 'r3']);
    const consumer = clients.consumer(groupId);
    const { messages, stream } = await collect(consumer, topic);
    await expect.poll(() => messages.length, { timeout: 15_000 }).toBe(4);
    const producer = clients.producer(uniqueName('tx-b'));

    const aborted = await producer.beginTransaction();
    await aborted.addConsumer(consumer);
    await aborted.addOffset(messages[3]!); // offset 3: commits 4
    await aborted.abort();
    expect(await committedOffsets(groupId, topic)).toEqual(['-1']);

    const committed = await producer.beginTransaction();
    await committed.addConsumer(consumer);
    await committed.addOffset(messages[1]!); // offset 1: commits 2 (the next record to read)
    expect(await committedOffsets(groupId, topic)).toEqual(['-1']);
    await committed.commit();
    // Visible once the commit marker reaches __consumer_offsets (written after EndTxn answered).
    await expect.poll(() => committedOffsets(groupId, topic), { timeout: 5_000, interval: 50 }).toEqual(['2']);
    await stream.close();
  });

  it('(b, patch) gives a new owner the offsets of a transaction still open only once it has ended (require_stable)', async () => {
    // A rebalanced-away zombie that has added its offsets and not yet committed: what does the
    // partition's new owner resume from? Without require_stable the coordinator answers with the
    // older committed offset (-1 here) and the new owner redoes a batch whose commit may still
    // land (stock 2.12.1 sent require_stable false). patches/@platformatic+kafka+2.12.1.patch asks
    // for stable offsets from read_committed consumers: UNSTABLE_OFFSET_COMMIT (retriable) while
    // the transaction is open, then the offsets it committed.
    const topic = await newTopic('pk-require-stable');
    const groupId = uniqueName('group-bs');
    await seed(topic, ['r0', 'r1', 'r2']);
    const owner = clients.consumer(groupId);
    const { messages, stream } = await collect(owner, topic);
    await expect.poll(() => messages.length, { timeout: 15_000 }).toBe(3);
    const producer = clients.producer(uniqueName('tx-bs'));
    const txn = await producer.beginTransaction();
    await txn.addConsumer(owner);
    await txn.addOffset(messages[2]!); // commits 3
    await stream.close();

    // What an OffsetFetch without require_stable answers meanwhile: the older offset, no error.
    const coordinator = brokers[0]!.split(':');
    const connection = new Connection(uniqueName('raw'), { sasl: graderLogin() });
    await connection.connect(coordinator[0]!, Number(coordinator[1]));
    try {
      const unstable = await offsetFetchV9.api.async(connection, [{ groupId, memberId: null, memberEpoch: -1, topics: [{ name: topic, partitionIndexes: [0] }] }], false);
      expect(unstable.groups[0]!.topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
    } finally {
      await connection.close();
    }

    const successor = clients.consumer(groupId);
    const asked = Date.now();
    const answer = successor.listCommittedOffsets({ topics: [{ topic, partitions: [0] }] });
    await new Promise((r) => setTimeout(r, 400));
    await txn.commit();
    const offsets = await answer;
    expect(offsets.get(topic)).toEqual([3n]);
    expect(Date.now() - asked, 'the answer waited for the commit').toBeGreaterThanOrEqual(400);
  });

  it('(c) fences the first producer when a second one starts with the same transactionalId, aborting its open transaction', async () => {
    const topic = await newTopic('pk-fencing');
    const transactionalId = uniqueName('tx-c');
    const zombie = clients.producer(transactionalId);
    const open = await zombie.beginTransaction();
    await open.send({ messages: [{ topic, key: 'k', value: 'from-zombie', partition: 0 }] });

    const successor = clients.producer(transactionalId);
    const fresh = await successor.beginTransaction();
    await fresh.send({ messages: [{ topic, key: 'k', value: 'from-successor', partition: 0 }] });
    await fresh.commit();

    const failure = await open.commit().then(() => null, (err: unknown) => err);
    expect(failure, 'the fenced producer must not be able to commit').not.toBeNull();
    expect(describeFailure(failure)).toMatch(/PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|fenced|epoch/i);

    expect(await readValues(clients, topic, 'read_committed', { until: 'from-successor' })).toEqual(['from-successor']);
    expect(await readValues(clients, topic, 'read_uncommitted', { until: 'from-successor' })).toEqual(['from-zombie', 'from-successor']);
  });

  it('(c, patch) lets a restarted producer claim its transactional.id: InitProducerId says "no producer" with -1/-1, not 0/0', async () => {
    // Stock 2.12.1 sent producerId 0 / epoch 0 when it had no producer to resume. Kafka 4 reads a
    // given id and epoch as "resume exactly this producer" (KIP-360) and, for a transactional.id
    // that already has one, answers PRODUCER_FENCED: every restart of a program, and every
    // successor of a zombie, failed in beginTransaction. patches/@platformatic+kafka+2.12.1.patch
    // sends -1/-1 (what the protocol's own request builder defaults to); test (c) runs through it.
    const transactionalId = uniqueName('tx-init');
    const topic = await newTopic('pk-init');
    const first = clients.producer(transactionalId);
    const txn = await first.beginTransaction();
    await txn.send({ messages: [{ topic, key: 'k', value: 'v', partition: 0 }] });
    await txn.commit();
    const [host, port] = brokers[0]!.split(':');
    const connection = new Connection(uniqueName('raw'), { sasl: graderLogin() });
    await connection.connect(host!, Number(port));
    try {
      // Right after a commit the coordinator may still be writing its markers: CONCURRENT_TRANSACTIONS
      // is its "ask again"; any other answer is the one under test.
      const init = async (producerId: bigint, epoch: number) => {
        for (let attempt = 0; ; attempt++) {
          const answer = await initProducerIdV5.api.async(connection, transactionalId, 5_000, producerId, epoch).then((r) => ({ ok: r }), (err: unknown) => ({ err }));
          if (!('err' in answer) || !/CONCURRENT_TRANSACTIONS/.test(describeFailure(answer.err)) || attempt === 50) return answer;
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      const stock = await init(0n, 0);
      expect('err' in stock ? describeFailure(stock.err) : 'accepted').toMatch(/PRODUCER_FENCED|fences/i);
      const patched = await init(-1n, -1);
      expect(patched).toHaveProperty('ok');
    } finally {
      await connection.close();
    }
  });

  it('(d) keeps the LSO below an open transaction, blocking its read_committed consumer, until it ends', async () => {
    const topic = await newTopic('pk-lso');
    const producer = clients.producer(uniqueName('tx-d'));
    const first = await producer.beginTransaction();
    await first.send({ messages: [{ topic, key: 'k', value: 'before', partition: 0 }] });
    await first.commit();

    const open = await producer.beginTransaction();
    await open.send({ messages: [{ topic, key: 'k', value: 'pending-1', partition: 0 }, { topic, key: 'k', value: 'pending-2', partition: 0 }] });

    const [during] = await partitionOffsets(brokers, topic);
    // 'before' at 0, its commit marker at 1, the open transaction's records at 2 and 3.
    expect(during).toMatchObject({ lso: 2, hwm: 4 });
    expect(await readValues(clients, topic, 'read_committed', { until: 'before', settleMs: 1_500 })).toEqual(['before']);
    // A read_uncommitted consumer is not held back by the LSO.
    expect(await readValues(clients, topic, 'read_uncommitted', { until: 'pending-2' })).toEqual(['before', 'pending-1', 'pending-2']);

    await open.commit();
    const [after] = await partitionOffsets(brokers, topic);
    expect(after!.lso).toBe(after!.hwm);
    expect(after!.hwm).toBe(5);
    expect(await readValues(clients, topic, 'read_committed', { until: 'pending-2' })).toEqual(['before', 'pending-1', 'pending-2']);
  });

  it('(e) hides a long-open aborted transaction that ends after a later one aborted (aborted list in marker order)', async () => {
    // The fetch's aborted-transaction list comes in abort-marker order: [late-starter, early-starter].
    // kafkajs 2.2.4 needed patches/kafkajs+2.2.4.patch here; this client must not leak early-1/2.
    const topic = await newTopic('pk-eos-overlap');
    const early = clients.producer(uniqueName('early'));
    const late = clients.producer(uniqueName('late'));
    const ok = clients.producer(uniqueName('ok'));
    const earlyTxn = await early.beginTransaction();
    await earlyTxn.send({ messages: [{ topic, value: 'early-1', partition: 0 }, { topic, value: 'early-2', partition: 0 }] });
    const lateTxn = await late.beginTransaction();
    await lateTxn.send({ messages: [{ topic, value: 'late-1', partition: 0 }] });
    await lateTxn.abort();
    const okTxn = await ok.beginTransaction();
    await okTxn.send({ messages: [{ topic, value: 'committed-1', partition: 0 }] });
    await okTxn.commit();
    await earlyTxn.abort();
    expect(await readValues(clients, topic, 'read_committed', { until: 'committed-1' })).toEqual(['committed-1']);
    expect(await readValues(clients, topic, 'read_uncommitted', { until: 'committed-1' })).toEqual(['early-1', 'early-2', 'late-1', 'committed-1']);
  });

  it('(e, patch) hides every aborted transaction of one producer when a fetch brings several', async () => {
    // Stock 2.12.1 kept one aborted range per producer id in a fetch answer (the last one listed),
    // so with two aborted transactions of the same producer in one answer the first one's records
    // reached read_committed consumers: a grader seeding with one producer (aborting every 4th
    // transaction) saw them in the output of a program reading a backlog. It also let records
    // through when their abort marker was not in the same answer. patches/@platformatic+kafka+2.12.1.patch
    // walks the answer in offset order as the Java consumer does.
    const topic = await newTopic('pk-same-producer-aborts');
    const producer = clients.producer(uniqueName('tx-e2'));
    const write = async (values: string[], commit: boolean) => {
      const txn = await producer.beginTransaction();
      await txn.send({ messages: values.map((value) => ({ topic, key: 'k', value, partition: 0 })) });
      await (commit ? txn.commit() : txn.abort());
    };
    await write(['aborted-1a', 'aborted-1b'], false);
    await write(['committed-1'], true);
    await write(['aborted-2'], false);
    await write(['committed-2'], true);
    await write(['aborted-3'], false);
    await write(['committed-3'], true);
    expect(await readValues(clients, topic, 'read_committed', { until: 'committed-3' })).toEqual(['committed-1', 'committed-2', 'committed-3']);
  });
});

describe('KIP-447: the group generation fences a zombie', () => {
  it('(f) refuses the transactional offset commit of a zombie whose generation is old, though its transactional.id is its own', async () => {
    const input = await newTopic('pk-kip447-in', 2);
    const output = await newTopic('pk-kip447-out');
    const groupId = uniqueName('group-f');
    await seed(input, ['p0-0', 'p0-1'], 0);
    await seed(input, ['p1-0', 'p1-1'], 1);

    // The instance that will become a zombie reads both partitions in generation N and opens its
    // transaction, with a transactional.id nobody else uses.
    const zombieConsumer = clients.consumer(groupId);
    const zombie = await collect(zombieConsumer, input);
    await expect.poll(() => zombie.messages.length, { timeout: 15_000 }).toBe(4);
    const staleGeneration = zombieConsumer.generationId;
    const held = zombie.messages.filter((m) => m.partition === 0).at(-1)!;
    expect(held.metadata.consumer).toMatchObject({ groupId, generationId: staleGeneration, memberId: zombieConsumer.memberId });
    const zombieProducer = clients.producer(uniqueName('tx-zombie'));
    const zombieTxn = await zombieProducer.beginTransaction();
    await zombieTxn.send({ messages: [{ topic: output, key: 'k', value: 'from-zombie', partition: 0 }] });
    await zombieTxn.addConsumer(zombieConsumer);

    // A second instance joins: the group rebalances into a newer generation, which the zombie's
    // consumer joins too; the batch it holds was read in the old one.
    const successorConsumer = clients.consumer(groupId);
    const successor = await collect(successorConsumer, input);
    await expect
      .poll(() => successorConsumer.generationId > staleGeneration && zombieConsumer.generationId === successorConsumer.generationId && (successorConsumer.assignments?.length ?? 0) > 0, {
        timeout: 20_000,
        interval: 100,
      })
      .toBe(true);

    // The coordinator compares the generation the commit carries with the group's: refused.
    const refusal = await zombieTxn.addOffset(held).then(() => null, (err: unknown) => err);
    expect(refusal, 'an offset commit from an old generation must be refused').not.toBeNull();
    expect(describeFailure(refusal)).toMatch(/ILLEGAL_GENERATION|generation/i);
    await zombieTxn.abort();

    // Control: the same request shape from the current generation is accepted. The successor
    // commits what it has read (every partition it owns).
    await expect.poll(() => successor.messages.length, { timeout: 15_000 }).toBeGreaterThan(0);
    const successorProducer = clients.producer(uniqueName('tx-successor'));
    const successorTxn = await successorProducer.beginTransaction();
    await successorTxn.send({ messages: [{ topic: output, key: 'k', value: 'from-successor', partition: 0 }] });
    await successorTxn.addConsumer(successorConsumer);
    const last = successor.messages.at(-1)!;
    expect((last.metadata.consumer as { generationId: number }).generationId).toBe(successorConsumer.generationId);
    await successorTxn.addOffset(last);
    await successorTxn.commit();

    const expected = ['-1', '-1'];
    expected[last.partition] = String(last.offset + 1n);
    await expect.poll(() => committedOffsets(groupId, input), { timeout: 5_000, interval: 50 }).toEqual(expected);
    expect(await readValues(clients, output, 'read_committed', { until: 'from-successor' })).toEqual(['from-successor']);
    await Promise.all([zombie.stream.close(), successor.stream.close()]);
  });

  it('(f, kafkajs) accepts the same stale commit from kafkajs, whose TxnOffsetCommit carries no generation', async () => {
    // Why the kafkajs labs need one transactional.id per input partition: without the generation
    // in the request, the coordinator cannot tell a zombie's commit from a live member's.
    const input = await newTopic('pk-kip447-kjs', 2);
    const groupId = uniqueName('group-fk');
    await seed(input, ['p0-0', 'p0-1'], 0);
    await seed(input, ['p1-0', 'p1-1'], 1);
    const zombieConsumer = clients.consumer(groupId);
    const zombie = await collect(zombieConsumer, input);
    await expect.poll(() => zombie.messages.length, { timeout: 15_000 }).toBe(4);
    const staleGeneration = zombieConsumer.generationId;
    const successorConsumer = clients.consumer(groupId);
    const successor = await collect(successorConsumer, input);
    await expect
      .poll(() => successorConsumer.generationId > staleGeneration && zombieConsumer.generationId === successorConsumer.generationId, { timeout: 20_000, interval: 100 })
      .toBe(true);

    const kafkajsZombie = kafka.producer({ transactionalId: uniqueName('tx-kjs-zombie'), idempotent: true, maxInFlightRequests: 1 });
    await kafkajsZombie.connect();
    try {
      const txn = await kafkajsZombie.transaction();
      await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [{ partition: 0, offset: '2' }] }] });
      await txn.commit();
    } finally {
      await kafkajsZombie.disconnect();
    }
    await expect.poll(async () => (await committedOffsets(groupId, input))[0], { timeout: 5_000, interval: 50 }).toBe('2');
    await Promise.all([zombie.stream.close(), successor.stream.close()]);
  });

  it('(g, patch) delivers no record of a partition the member lost while a fetch was in flight', async () => {
    // Records are labelled with the generation current when they are pushed, not when they were
    // fetched, so stale ones pass the generation check of (f). Stock 2.12.1 pushed the answer of a
    // fetch sent before a rebalance even for partitions the member no longer owned (a zombie lab
    // grade then showed two instances committing the same batch, both in the current generation);
    // patches/@platformatic+kafka+2.12.1.patch drops them, and records of partitions repositioned
    // by the rebalance. A long-poll fetch (maxWaitTime 8 s) stays in flight across the rebalance.
    const input = await newTopic('pk-stale-fetch', 2);
    const groupId = uniqueName('group-g');
    await seed(input, ['p0-0'], 0);
    await seed(input, ['p1-0'], 1);
    const first = clients.consumer(groupId, { maxWaitTime: 8_000 });
    const outsideAssignment: string[] = [];
    const firstSeen: string[] = [];
    const firstStream = await first.consume({ topics: [input], mode: 'committed', fallbackMode: 'earliest', autocommit: false });
    firstStream.on('data', (m: { partition: number; value: string }) => {
      firstSeen.push(m.value);
      const owned = first.assignments?.find((a) => a.topic === input)?.partitions ?? [];
      if (!owned.includes(m.partition)) outsideAssignment.push(`${m.value} (partition ${m.partition}, owned ${JSON.stringify(owned)})`);
    });
    await expect.poll(() => firstSeen.length, { timeout: 15_000 }).toBe(2);
    await new Promise((r) => setTimeout(r, 300)); // the next fetch is now long-polling
    const generation = first.generationId;

    const second = clients.consumer(groupId);
    const secondSeen: string[] = [];
    const secondStream = await second.consume({ topics: [input], mode: 'committed', fallbackMode: 'earliest', autocommit: false });
    secondStream.on('data', (m: { value: string }) => secondSeen.push(m.value));
    await expect
      .poll(() => second.generationId > generation && first.generationId === second.generationId && (second.assignments?.[0]?.partitions.length ?? 0) === 1, { timeout: 6_000, interval: 50 })
      .toBe(true);
    const lost = second.assignments![0]!.partitions[0]!;
    // Written while the first member's old fetch still waits: it answers with this record.
    await seed(input, [`p${lost}-after`], lost);
    await expect.poll(() => secondSeen, { timeout: 15_000 }).toContain(`p${lost}-after`);
    await new Promise((r) => setTimeout(r, 500));
    expect(outsideAssignment).toEqual([]);
    expect(firstSeen).not.toContain(`p${lost}-after`);
    await Promise.all([firstStream.close(), secondStream.close()]);
  });

  it('(h, patch) labels records fetched while a rejoin is under way with the generation of their assignment', async () => {
    // JoinGroup's answer sets generationId before SyncGroup hands out the new assignment. Records
    // fetched in between belong to the old assignment; stock 2.12.1 labelled them with the new
    // generation, so the TxnOffsetCommit of a partition SyncGroup was about to give to another
    // member passed KIP-447's check, and both members committed the batch (the zombie lab's
    // solution in this client failed no-duplicates in 2 of its 5 grades under load). The window is
    // made by hand: the generation moves as JoinGroup's answer moves it, and heartbeats (which
    // would start a real rejoin) are 3 s apart.
    const input = await newTopic('pk-rejoin-window', 1);
    const consumer = clients.consumer(uniqueName('group-h'), { heartbeatInterval: 3_000 });
    const seen: Array<{ value: string; generation: number }> = [];
    const stream = await consumer.consume({ topics: [input], mode: 'committed', fallbackMode: 'earliest', autocommit: false });
    stream.on('data', (m) => seen.push({ value: m.value, generation: (m.metadata.consumer as { generationId: number }).generationId }));
    await seed(input, ['before'], 0);
    await expect.poll(() => seen.length, { timeout: 15_000 }).toBe(1);
    const assigned = consumer.generationId;
    expect(seen[0]).toEqual({ value: 'before', generation: assigned });
    consumer.generationId = assigned + 1; // what JoinGroup's answer does, SyncGroup still to come
    await seed(input, ['in-window'], 0);
    await expect.poll(() => seen.length, { timeout: 2_500, interval: 20 }).toBe(2);
    expect(seen[1]).toEqual({ value: 'in-window', generation: assigned });
    await stream.close().catch(() => undefined); // its group state is the made-up one
  });

  it('(i, patch) refuses at once the offset commit of records fetched after the member lost its membership', async () => {
    // A heartbeat answered UNKNOWN_MEMBER_ID (a member frozen past its session timeout) clears the
    // member id, and a fetch answered after that labels its records with none. Stock 2.12.1 sent
    // their TxnOffsetCommit with a null member id, which the broker cannot read: it closes the
    // connection, and the producer retried that without end (the zombie lab's solution in this
    // client stalled until restarted, failing keeps-up, in 2 of 17 grades under load). The patch
    // refuses it as the coordinator refuses a member it does not know. Heartbeats are 3 s apart,
    // so none rejoins the group while the member id is cleared by hand.
    const input = await newTopic('pk-no-member', 1);
    const output = await newTopic('pk-no-member-out');
    const consumer = clients.consumer(uniqueName('group-i'), { heartbeatInterval: 3_000 });
    const seen: StringMessage[] = [];
    const stream = await consumer.consume({ topics: [input], mode: 'committed', fallbackMode: 'earliest', autocommit: false });
    stream.on('data', (m) => seen.push(m));
    await seed(input, ['before'], 0);
    await expect.poll(() => seen.length, { timeout: 15_000 }).toBe(1);
    consumer.memberId = null as unknown as string; // what the heartbeat's UNKNOWN_MEMBER_ID does
    await seed(input, ['after'], 0);
    await expect.poll(() => seen.length, { timeout: 2_500, interval: 20 }).toBe(2);
    expect(seen[1]!.metadata.consumer).toMatchObject({ memberId: null });

    const producer = clients.producer(uniqueName('tx-no-member'));
    const txn = await producer.beginTransaction();
    await txn.send({ messages: [{ topic: output, key: 'k', value: 'never-committed', partition: 0 }] });
    await txn.addConsumer(consumer);
    const started = Date.now();
    const refusal = await txn.addOffset(seen[1]!).then(() => null, (err: unknown) => err);
    expect(describeFailure(refusal)).toMatch(/UNKNOWN_MEMBER_ID/);
    expect(Date.now() - started).toBeLessThan(1_000);
    await txn.abort();
    expect(await readValues(clients, output, 'read_committed')).toEqual([]);
    await stream.close().catch(() => undefined); // its group state is the made-up one
  });
});
