// Order pipeline, at-least-once version: filter -> enrich -> aggregate, three stages in one
// program. It produces the right totals until something crashes. Make every stage exactly-once
// and the aggregate's totals survive restarts: look for the TODOs (lessons 10.1.6 and 10.1.7).
import { Kafka, type KafkaMessage, type Message } from 'kafkajs';

const ORDERS_TOPIC = process.env.INPUT_TOPIC!;
const FILTERED_TOPIC = process.env.FILTERED_TOPIC!;
const ENRICHED_TOPIC = process.env.ENRICHED_TOPIC!;
const CHANGELOG_TOPIC = process.env.CHANGELOG_TOPIC!;
const TOTALS_TOPIC = process.env.OUTPUT_TOPIC!;
const GROUP_ID = process.env.GROUP_ID!;

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-pipeline', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });

// ---- the records (their exact shape matters for the output: compact JSON, fields in this order) ----

interface Order {
  orderId: string;
  customerId: string;
  amount: number;
  status: string; // "live" or "test"
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

// ---- one stage: read `input`, turn each batch into records to write ----------------------------

interface Stage {
  name: string;
  groupId: string;
  input: string;
  process: (messages: KafkaMessage[], partition: number) => { topic: string; messages: Message[] }[];
}

async function runStage(stage: Stage) {
  // TODO: read committed records only (an aborted upstream attempt must stay invisible).
  const consumer = kafka.consumer({ groupId: stage.groupId });
  // TODO: one transactional producer per input partition, created when the stage takes the
  // partition, with a transactional.id every instance derives the same way, e.g.
  // `${stage.groupId}-${stage.input}-${partition}` (idempotent, maxInFlightRequests: 1). Open and
  // abort an empty transaction first (that fences the previous owner), then read the group's
  // committed offset and skip records below it. Start afresh after every rebalance (GROUP_JOIN).
  const producer = kafka.producer();
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: stage.input, fromBeginning: true });
  await consumer.run({
    // TODO: no offset commits of the consumer's own: the offsets belong in the transaction.
    autoCommit: true,
    eachBatch: async ({ batch }) => {
      const writes = stage.process(batch.messages, batch.partition);
      // TODO: one transaction per batch: send the writes, sendOffsets (last offset + 1) for
      // stage.groupId, commit; on any error abort, forget the partition's producer (and state)
      // and rethrow. Commit offsets even when a batch writes nothing (all test orders).
      for (const write of writes) if (write.messages.length > 0) await producer.send(write);
    },
  });
  return async () => {
    await consumer.disconnect();
    await producer.disconnect();
  };
}

// ---- the three stages --------------------------------------------------------------------------

const filter: Stage = {
  name: 'filter',
  groupId: GROUP_ID, // stage 1's group is the lab's GROUP_ID: the grader checks its offsets
  input: ORDERS_TOPIC,
  process: (messages) => [
    {
      topic: FILTERED_TOPIC,
      messages: messages
        .filter((m) => (JSON.parse(m.value!.toString()) as Order).status === 'live')
        .map((m) => ({ key: m.key, value: m.value })),
    },
  ],
};

const enrich: Stage = {
  name: 'enrich',
  groupId: `${GROUP_ID}-enrich`,
  input: FILTERED_TOPIC,
  process: (messages) => [
    {
      topic: ENRICHED_TOPIC,
      messages: messages.map((m) => {
        const o = JSON.parse(m.value!.toString()) as Order;
        const enriched: EnrichedOrder = { orderId: o.orderId, customerId: o.customerId, amount: o.amount, tier: tierOf(o.customerId) };
        return { key: m.key, value: JSON.stringify(enriched) };
      }),
    },
  ],
};

// TODO: this state is lost on every restart, and it already holds a batch whose transaction may
// still abort. Keep it per partition, write each changed total to CHANGELOG_TOPIC (partition =
// the input partition) in the same transaction, update the map only after commit(), and restore
// it from the changelog (read_committed, to its end) when the stage takes a partition.
const totals = new Map<string, Totals>();

const aggregate: Stage = {
  name: 'aggregate',
  groupId: `${GROUP_ID}-aggregate`,
  input: ENRICHED_TOPIC,
  process: (messages) => {
    const out: Message[] = [];
    for (const m of messages) {
      const o = JSON.parse(m.value!.toString()) as EnrichedOrder;
      const before = totals.get(o.customerId) ?? { count: 0, amount: 0 };
      const after = { count: before.count + 1, amount: before.amount + o.amount };
      totals.set(o.customerId, after);
      out.push({ key: m.key, value: totalsRecord(o, after) });
    }
    void CHANGELOG_TOPIC; // TODO: write the changed totals here, in the same transaction
    return [{ topic: TOTALS_TOPIC, messages: out }];
  },
};

const stops = await Promise.all([runStage(filter), runStage(enrich), runStage(aggregate)]);

process.once('SIGTERM', async () => {
  for (const stop of stops) await stop();
  process.exit(0);
});
