/**
 * KIP-447 with @platformatic/kafka, the one building block kafkajs cannot give: a zombie whose
 * consumer-group generation is old has its transactional offset commit refused by the group
 * coordinator, even though its transactional.id is its own and nobody fenced it; and the patches
 * that keep a batch's offsets fenced by the generation and member it was fetched under.
 */
import { describe, expect, it } from 'vitest';
import { uniqueName } from './support/kafka.ts';
import { collect, describeFailure, platformaticSuite, readValues, type StringMessage } from './support/platformatic.ts';

const { kafka, clients, newTopic, seed, committedOffsets } = platformaticSuite('platformatic-kip447');

/** A member of a new group that has read both partitions of a new 2-partition input (2 records each). */
async function zombieReadBoth(topicPrefix: string, groupPrefix: string) {
  const input = await newTopic(topicPrefix, 2);
  const groupId = uniqueName(groupPrefix);
  await seed(input, ['p0-0', 'p0-1'], 0);
  await seed(input, ['p1-0', 'p1-1'], 1);
  const zombieConsumer = clients.consumer(groupId);
  const zombie = await collect(zombieConsumer, input);
  await expect.poll(() => zombie.messages.length, { timeout: 15_000 }).toBe(4);
  return { input, groupId, zombieConsumer, zombie, staleGeneration: zombieConsumer.generationId };
}

/** A second member joins: the group rebalances into a newer generation, which the first joins too. */
async function successorJoins(read: Awaited<ReturnType<typeof zombieReadBoth>>) {
  const successorConsumer = clients.consumer(read.groupId);
  const successor = await collect(successorConsumer, read.input);
  await expect
    .poll(() => successorConsumer.generationId > read.staleGeneration && read.zombieConsumer.generationId === successorConsumer.generationId && (successorConsumer.assignments?.length ?? 0) > 0, {
      timeout: 20_000,
      interval: 100,
    })
    .toBe(true);
  return { successorConsumer, successor };
}

describe('KIP-447: the group generation fences a zombie', () => {
  it('(f) refuses the transactional offset commit of a zombie whose generation is old, though its transactional.id is its own', async () => {
    // The instance that will become a zombie reads both partitions in generation N and opens its
    // transaction, with a transactional.id nobody else uses.
    const read = await zombieReadBoth('pk-kip447-in', 'group-f');
    const { input, groupId, zombieConsumer, zombie, staleGeneration } = read;
    const output = await newTopic('pk-kip447-out');
    const held = zombie.messages.filter((m) => m.partition === 0).at(-1)!;
    expect(held.metadata.consumer).toMatchObject({ groupId, generationId: staleGeneration, memberId: zombieConsumer.memberId });
    const zombieProducer = clients.producer(uniqueName('tx-zombie'));
    const zombieTxn = await zombieProducer.beginTransaction();
    await zombieTxn.send({ messages: [{ topic: output, key: 'k', value: 'from-zombie', partition: 0 }] });
    await zombieTxn.addConsumer(zombieConsumer);

    // A second instance joins; the batch the zombie holds was read in the old generation.
    const { successorConsumer, successor } = await successorJoins(read);

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
    const read = await zombieReadBoth('pk-kip447-kjs', 'group-fk');
    const { input, groupId, zombie } = read;
    const { successor } = await successorJoins(read);

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
