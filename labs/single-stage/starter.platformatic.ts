// Single-stage pipeline with @platformatic/kafka, at-least-once version. It works until something
// crashes. Your job: make it exactly-once with a transactional producer. Look for the TODOs.
import { Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka';

const brokers = process.env.KAFKA_BROKERS!.split(',');
const inputTopic = process.env.INPUT_TOPIC!;
const outputTopic = process.env.OUTPUT_TOPIC!;

// Retries, set on each client: @platformatic/kafka retries a failed request 3 times, 1 s apart,
// unless told otherwise, except an idempotent producer that sets no count, which retries without
// limit. Keep the producer unlimited: a send it gave up on may have been written all the same.
// 10 for the consumer (about 10 s of broker trouble at the default delay) suits production; this
// lab shortens the delay (see its environment panel).
// TODO: give the producer the lab's TRANSACTIONAL_ID (and idempotent: true) so it can use transactions.
const producer = new Producer({ clientId: 'upper-case', bootstrapBrokers: brokers, serializers: stringSerializers, retries: Number.MAX_SAFE_INTEGER });
const consumer = new Consumer({
  clientId: 'upper-case',
  groupId: process.env.GROUP_ID!,
  bootstrapBrokers: brokers,
  deserializers: stringDeserializers,
  retries: 10,
});

// TODO: offsets must be committed inside the transaction (addConsumer + addOffset), not by the
// consumer on its own: turn autocommit off.
const stream = await consumer.consume({ topics: [inputTopic], mode: 'committed', fallbackMode: 'earliest', autocommit: true });

for await (const message of stream) {
  // TODO: begin a transaction, send, add the message's offset with addOffset, commit.
  await producer.send({ messages: [{ topic: outputTopic, key: message.key, value: message.value.toUpperCase() }] });
}

process.on('SIGTERM', async () => {
  await consumer.close(true);
  await producer.close();
  process.exit(0);
});
