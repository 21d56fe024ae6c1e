// Zombie lab starter with @platformatic/kafka: an at-least-once pipeline. Three instances share the
// group; the grader kills one right after it wrote, and freezes another mid-batch until the others
// have taken over its partitions. Grade it to see the duplicates, then follow the TODOs.
import { Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka';

const brokers = process.env.KAFKA_BROKERS!.split(',');
const inputTopic = process.env.INPUT_TOPIC!;
const outputTopic = process.env.OUTPUT_TOPIC!;

/** "r-00003 sensor=k003 celsius=11" -> "r-00003 sensor=k003 fahrenheit=51.8" */
const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

// Retries, set on each client: @platformatic/kafka retries a failed request 3 times, 1 s apart,
// unless told otherwise, except an idempotent producer that sets no count, which retries without
// limit. Keep the producer unlimited: a send it gave up on may have been written all the same.
// 10 for the consumer (about 10 s of broker trouble at the default delay) suits production; this
// lab shortens the delay (see its environment panel).
// TODO: give the producer a transactional.id (and idempotent: true). Which one: TRANSACTIONAL_ID (this
// instance's) or one per input partition? See the hints: this client sends the group generation.
const producer = new Producer({ clientId: `fahrenheit-${process.env.INSTANCE_ID}`, bootstrapBrokers: brokers, serializers: stringSerializers, retries: Number.MAX_SAFE_INTEGER });
const consumer = new Consumer({
  clientId: `fahrenheit-${process.env.INSTANCE_ID}`,
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
  await producer.send({ messages: [{ topic: outputTopic, key: message.key, value: toFahrenheit(message.value) }] });
}

process.on('SIGTERM', async () => {
  await consumer.close(true);
  await producer.close();
  process.exit(0);
});
