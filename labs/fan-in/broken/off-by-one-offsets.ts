// expect-fail: offsets-consistent
// Joins exactly once, but commits, for each input topic, the offset of the last record it read
// instead of the NEXT one to read, so the group always points one record back on both topics, and
// a restart reads that record again.
import { AssignerProtocol, Kafka, type EachBatchPayload, type KafkaMessage, type PartitionAssigner, type Producer } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const ORDERS_TOPIC = env('ORDERS_TOPIC');
const PAYMENTS_TOPIC = env('PAYMENTS_TOPIC');
const OUTPUT_TOPIC = env('OUTPUT_TOPIC');
const GROUP_ID = env('GROUP_ID');
const INPUTS = [ORDERS_TOPIC, PAYMENTS_TOPIC];

// ---- step 1: partition p of both topics goes to the same member -------------------------------
// kafkajs's default round-robin assigner deals out topic-partitions one by one, so orders-1 and
// payments-1 could land on different instances and their halves would never meet.
const CoPartitionedAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'CoPartitionedAssigner',
  version: 1,
  async assign({ members, topics }) {
    const memberIds = members.map((m) => m.memberId).sort();
    const partitions = Math.max(...topics.map((t) => cluster.findTopicPartitionMetadata(t).length));
    const plan = new Map<string, Record<string, number[]>>(memberIds.map((id) => [id, {}]));
    for (let p = 0; p < partitions; p++) {
      const owner = plan.get(memberIds[p % memberIds.length]!)!;
      for (const topic of topics) (owner[topic] ??= []).push(p);
    }
    return memberIds.map((memberId) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: plan.get(memberId)!, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return {
      name: 'CoPartitionedAssigner',
      metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }),
    };
  },
});

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-payment-join', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const admin = kafka.admin();
// read_committed (kafkajs's default): an aborted order or payment must never complete a pair.
const consumer = kafka.consumer({ groupId: GROUP_ID, readUncommitted: false, partitionAssigners: [CoPartitionedAssigner] });

// ---- step 2: one producer and one set of waiting records per join partition --------------------
interface JoinPartition {
  producer: Producer;
  /** Group generation the slot was opened in: a rebalance means fence and replay again. */
  generation: number;
  /** Committed offsets read right after fencing: records below them are replayed, not processed. */
  replayUntil: Record<string, number>;
  /** Next offset to read per input topic in this slot (guards against a batch delivered twice). */
  position: Record<string, number>;
  /** The group's committed offsets as this slot last wrote (or read) them. */
  committed: Record<string, number>;
  /** Unmatched halves by order id. */
  waiting: Map<string, { topic: string; value: string }>;
  /** Records at or after their committed offset, held back until BOTH topics are replayed. */
  pending: { topic: string; message: KafkaMessage }[];
}

const slots = new Map<number, JoinPartition>();
let generation = 0;
consumer.on(consumer.events.GROUP_JOIN, () => {
  generation += 1;
});

async function dropSlot(partition: number) {
  const slot = slots.get(partition);
  slots.delete(partition);
  await slot?.producer.disconnect().catch(() => {});
}

// ---- step 3: fence, read the committed offsets, rewind both inputs -----------------------------
async function openSlot(partition: number) {
  const producer = kafka.producer({
    transactionalId: `${GROUP_ID}-join-${partition}`, // the same on every instance: it follows the partition
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { retries: Number.MAX_SAFE_INTEGER },
  });
  const slot: JoinPartition = { producer, generation, replayUntil: {}, position: {}, committed: {}, waiting: new Map(), pending: [] };
  try {
    await producer.connect();
    // kafkajs sends InitProducerId at the first transaction(): this fences any earlier owner of the
    // join partition and settles its open transaction BEFORE we read the committed offsets.
    await (await producer.transaction()).abort();
    const committed = await admin.fetchOffsets({ groupId: GROUP_ID, topics: INPUTS });
    for (const topic of INPUTS) {
      const low = Number((await admin.fetchTopicOffsets(topic)).find((o) => o.partition === partition)!.low);
      const offset = Number(committed.find((t) => t.topic === topic)?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
      slot.replayUntil[topic] = offset < 0 ? low : Math.max(offset, low);
      slot.committed[topic] = slot.replayUntil[topic]!;
      slot.position[topic] = low;
    }
  } catch (err) {
    await producer.disconnect().catch(() => {});
    throw err; // the batch was not resolved: kafkajs hands it over again and we try again
  }
  // Rewind both inputs: everything below the committed offsets is replayed to rebuild `waiting`.
  for (const topic of INPUTS) consumer.seek({ topic, partition, offset: String(slot.position[topic]) });
  slots.set(partition, slot);
  console.log(
    `join partition ${partition}: fenced, replaying ${INPUTS.map((t) => `${t === ORDERS_TOPIC ? 'orders' : 'payments'} below ${slot.replayUntil[t]}`).join(' and ')}`,
  );
}

const replayed = (slot: JoinPartition) => INPUTS.every((t) => slot.position[t]! >= slot.replayUntil[t]!);

/** Puts a record next to its other half: returns the joined value when the pair is complete. */
function meet(slot: JoinPartition, topic: string, key: string, value: string): string | null {
  const other = slot.waiting.get(key);
  if (!other || other.topic === topic) {
    slot.waiting.set(key, { topic, value });
    return null;
  }
  slot.waiting.delete(key);
  const [order, payment] = topic === ORDERS_TOPIC ? [value, other.value] : [other.value, value];
  return JSON.stringify({ orderId: key, order: JSON.parse(order), payment: JSON.parse(payment) });
}

async function processBatch({ batch, resolveOffset, heartbeat, isStale }: EachBatchPayload) {
  const { topic, partition } = batch;
  if (isStale()) return; // fetched before our seek: the seek delivers these records again
  const current = slots.get(partition);
  if (!current || current.generation !== generation) {
    await dropSlot(partition);
    await openSlot(partition); // seeks both topics: this batch is now stale
    return;
  }
  const slot = current;

  for (const message of batch.messages) {
    const offset = Number(message.offset);
    if (offset < slot.position[topic]!) continue;
    slot.position[topic] = offset + 1;
    if (offset < slot.replayUntil[topic]!) {
      // Replay: a pair whose halves are BOTH below the committed offsets was joined and
      // committed before (that transaction moved both offsets past them), so drop it.
      const key = message.key!.toString();
      if (meet(slot, topic, key, message.value!.toString()) !== null) continue;
    } else {
      slot.pending.push({ topic, message });
    }
  }
  resolveOffset(batch.lastOffset());

  // A live record may only meet the other topic once every replayed record of that topic is in
  // `waiting`; otherwise its partner could still be unreplayed, the pair would look "both below the
  // committed offsets" after the next crash, and the join would be lost.
  if (replayed(slot) && slot.pending.length > 0) {
    const joins: { key: string; value: string }[] = [];
    for (const { topic: from, message } of slot.pending) {
      const key = message.key!.toString();
      const value = meet(slot, from, key, message.value!.toString());
      if (value !== null) joins.push({ key, value });
    }
    const txn = await slot.producer.transaction();
    try {
      if (joins.length > 0) await txn.send({ topic: OUTPUT_TOPIC, messages: joins });
      // Both offsets, always: the pair of committed offsets says exactly which joins exist.
      await txn.sendOffsets({
        consumerGroupId: GROUP_ID,
        topics: INPUTS.map((t) => ({ topic: t, partitions: [{ partition, offset: String(slot.position[t]! - 1) }] })),
      });
      await txn.commit();
    } catch (err) {
      await txn.abort().catch(() => {});
      // `waiting` already holds these records: start the join partition afresh. kafkajs has
      // already moved past them (resolveOffset above), so rewind both inputs to the committed
      // offsets: the next batch finds no slot, fences again and replays.
      await dropSlot(partition);
      for (const t of INPUTS) consumer.seek({ topic: t, partition, offset: String(slot.committed[t]) });
      throw err;
    }
    slot.pending = [];
    for (const t of INPUTS) slot.committed[t] = slot.position[t]!;
    console.log(
      `join partition ${partition}: ${joins.length} joined, offsets orders=${slot.position[ORDERS_TOPIC]} payments=${slot.position[PAYMENTS_TOPIC]}, ${slot.waiting.size} waiting`,
    );
  }
  await heartbeat();
}

await admin.connect();
await consumer.connect();
await consumer.subscribe({ topics: INPUTS, fromBeginning: true });
await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

// Fenced: a newer owner has one of our join partitions. kafkajs cannot go on with that producer;
// exit and let the supervisor start us afresh (we rejoin the group and replay).
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) {
    console.error(`consumer stopped: ${payload.error.message}`);
    process.exit(1);
  }
});

const shutdown = async () => {
  await consumer.disconnect();
  for (const partition of [...slots.keys()]) await dropSlot(partition);
  await admin.disconnect();
  process.exit(0);
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
