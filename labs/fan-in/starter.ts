// Fan-in join, at-least-once version: it joins orders with payments by order id, and it works
// until something crashes. Then a payment whose offset was auto-committed waits in a map that no
// longer exists, and a join sent just before the crash is sent again after it.
// Your job: make it exactly once. Follow the TODOs (they match the lesson's steps; the lesson
// "Fan-in: the complete join" shows what can take the place of the sections below step 1).
import { AssignerProtocol, Kafka, type PartitionAssigner } from 'kafkajs';

const ORDERS_TOPIC = process.env.ORDERS_TOPIC!;
const PAYMENTS_TOPIC = process.env.PAYMENTS_TOPIC!;
const OUTPUT_TOPIC = process.env.OUTPUT_TOPIC!;
const GROUP_ID = process.env.GROUP_ID!;
const INPUTS = [ORDERS_TOPIC, PAYMENTS_TOPIC];

// Step 1 (done for you): partition p of BOTH topics goes to the same member, so the two halves of
// an order id always meet in one instance. kafkajs's default assigner does not promise that.
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
const kafka = new Kafka({ clientId: 'order-payment-join', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: GROUP_ID, partitionAssigners: [CoPartitionedAssigner] });

// ---- slots: step 2, one producer per join partition ---------------------------------------------
// TODO (step 2): one transactional producer per join partition p, created when you first get a
// batch of p (again after every rebalance: listen for consumer.events.GROUP_JOIN), with
// transactionalId `${GROUP_ID}-join-${p}`, idempotent: true, maxInFlightRequests: 1 and its own
// retry count. Open and abort an empty transaction right away: that fences the previous owner of
// p before you read anything.
const producer = kafka.producer();

// ---- replay: step 3, rebuild the waiting records after fencing -----------------------------------
// Unmatched halves by order id.
// TODO (step 3): keep one map per join partition, and rebuild it after fencing: read the committed
// offsets of both topics (admin.fetchOffsets), seek both partitions to their first offset, put
// records below the committed offsets into the map (a pair of two such records was joined
// before: drop it), and hold newer records back until BOTH partitions are replayed that far.
const waiting = new Map<string, { topic: string; value: string }>();

// ---- loop: read, join, commit --------------------------------------------------------------------
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topics: INPUTS, fromBeginning: true });

await consumer.run({
  // TODO: no auto-commit: use eachBatch, and put the next offsets of BOTH input partitions in the
  // transaction with the joins (txn.sendOffsets with two topics), then commit.
  autoCommit: true,
  eachMessage: async ({ topic, message }) => {
    const key = message.key!.toString();
    const value = message.value!.toString();
    const other = waiting.get(key);
    if (!other || other.topic === topic) {
      waiting.set(key, { topic, value }); // the first half waits for the second
      return;
    }
    waiting.delete(key);
    const [order, payment] = topic === ORDERS_TOPIC ? [value, other.value] : [other.value, value];
    // The output format: JSON.stringify of the parsed values gives exactly the expected bytes.
    const joined = JSON.stringify({ orderId: key, order: JSON.parse(order), payment: JSON.parse(payment) });
    // TODO: send inside the transaction of this join partition, not on its own.
    await producer.send({ topic: OUTPUT_TOPIC, messages: [{ key, value: joined }] });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
