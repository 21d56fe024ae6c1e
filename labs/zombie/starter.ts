// Zombie lab starter: a correct exactly-once pipeline for ONE instance (the single-stage pattern).
// Here three instances share the group, and the grader freezes one mid-transaction until the others
// have taken over its partitions. Grade it to see the duplicates, then follow the TODOs.
import { Kafka, type EachBatchPayload, type Producer } from 'kafkajs';

const instanceId = process.env.INSTANCE_ID!;
// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: `fahrenheit-${instanceId}`, brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const inputTopic = process.env.INPUT_TOPIC!;
const outputTopic = process.env.OUTPUT_TOPIC!;
const groupId = process.env.GROUP_ID!;

/** "r-00003 sensor=k003 celsius=11" -> "r-00003 sensor=k003 fahrenheit=51.8" */
const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

const consumer = kafka.consumer({ groupId, readUncommitted: false });

// TODO 1: this id belongs to the INSTANCE. It fences a restarted copy of this instance, but not the
// instance that owned a partition before a rebalance. Give every input partition its own producer
// instead, with transactionalId `${process.env.TRANSACTIONAL_ID_PREFIX}-${inputTopic}-${partition}`
// (the same in every instance), created the first time this instance processes that partition.
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
await producer.connect();
await (await producer.transaction()).abort(); // kafkajs registers (and fences) the id here

/** The producer that writes the outputs of one input partition. */
async function producerFor(partition: number): Promise<Producer> {
  // TODO 2: fence before processing: a new partition producer must open and abort an empty
  //         transaction first (that is when kafkajs sends InitProducerId, aborting the old
  //         owner's open transaction).
  // TODO 3: only then read the group's committed offset for the partition (admin.fetchOffsets) and
  //         skip records below it: kafkajs fetched its position before you fenced.
  void partition;
  return producer;
}

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  const txnProducer = await producerFor(batch.partition);
  const transaction = await txnProducer.transaction();
  try {
    await transaction.send({
      topic: outputTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: toFahrenheit(m.value!.toString()) })),
    });
    await transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await transaction.commit();
  } catch (err) {
    await transaction.abort().catch(() => {});
    // TODO 4: a failed partition producer is finished (fenced: INVALID_PRODUCER_EPOCH): drop it, so
    //         the next batch of that partition fences afresh. A fenced error is not retriable for
    //         kafkajs: rethrowing it stops the consumer.
    throw err;
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

// TODO 5 (tidy): on consumer.events.GROUP_JOIN, drop the producers of partitions no longer assigned.
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) process.exit(1);
});

await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });
await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
