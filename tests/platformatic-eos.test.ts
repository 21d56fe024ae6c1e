/**
 * The exactly-once building blocks of tests/eos-primitives.test.ts, proved again with
 * @platformatic/kafka's own producer and read_committed consumer against the pinned broker (KIP-447,
 * which kafkajs cannot give, is in tests/platformatic-kip447.test.ts). The broker is only observed
 * through kafkajs's admin (topic creation, committed offsets) and the LSO probe; every read and
 * write under test is the new client's.
 */
import { describe, expect, it } from 'vitest';
import { partitionOffsets } from '../lab-server/kafka/inspect.ts';
import { uniqueName } from './support/kafka.ts';
import { Connection, initProducerIdV5, offsetFetchV9 } from '@platformatic/kafka';
import { collect, describeFailure, graderLogin, platformaticSuite, readValues } from './support/platformatic.ts';

const { brokers, clients, newTopic, seed, committedOffsets } = platformaticSuite('platformatic-eos');

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
