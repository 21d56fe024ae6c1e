/**
 * Answers the relay gives in the broker's place. An injected send error is a Produce request the
 * relay never forwards, answered with a refusal in the layout of the request's version, so any
 * client in any language fails that send exactly as a broker's refusal would make it fail.
 *
 * The refusal is INVALID_RECORD (87): every client treats it as final for the batch (no retry),
 * a transactional client must then abort, and since the broker never saw the batch, its producer
 * sequence is where the client's rollback (kafkajs, the Java client) or epoch bump (librdkafka,
 * the Java client) expects it. Kafka's message definitions (ProduceResponse.json) give the layout.
 */
import { Writer } from '@platformatic/kafka';
import { FIRST_FLEXIBLE, type KafkaRequestBody, type KafkaResponseBody } from './kafka-bodies.ts';

export const INJECTED_SEND_ERROR = { code: 87, name: 'INVALID_RECORD' } as const;
const MESSAGE = 'refused by the grader (an injected send error): the batch was not written';

type ProduceRequest = Extract<KafkaRequestBody, { api: 'Produce' }>;

/** The partitions a Produce request writes, per topic, in the order the request names them. */
function partitionsByTopic(request: ProduceRequest): Array<{ topic: string; topicId?: string; partitions: number[] }> {
  const topics = new Map<string, { topic: string; topicId?: string; partitions: number[] }>();
  for (const b of request.batches) {
    const key = b.topicId ?? b.topic;
    const entry = topics.get(key) ?? { topic: b.topic, ...(b.topicId ? { topicId: b.topicId } : {}), partitions: [] };
    if (!entry.partitions.includes(b.partition)) entry.partitions.push(b.partition);
    topics.set(key, entry);
  }
  return [...topics.values()];
}

/**
 * A whole response frame (size prefix, header, body) refusing every partition of `request` with
 * INVALID_RECORD, for the request's correlation id and version, and that answer as the relay reads it.
 */
export function produceRefusal(request: ProduceRequest, correlationId: number, version: number): { frame: Buffer; body: KafkaResponseBody } {
  const topics = partitionsByTopic(request);
  const body: KafkaResponseBody = {
    api: 'Produce',
    partitions: topics.flatMap(({ partitions, ...topic }) => partitions.map((partition) => ({ ...topic, partition, errorCode: INJECTED_SEND_ERROR.code, baseOffset: -1n }))),
  };
  const flexible = version >= FIRST_FLEXIBLE.Produce;
  const w = Writer.create().appendInt32(correlationId);
  if (flexible) w.appendTaggedFields();
  w.appendArray(
    topics,
    (t, topic) => {
      if (version >= 13) t.appendUUID(topic.topicId ?? null);
      else t.appendString(topic.topic, flexible);
      t.appendArray(
        topic.partitions,
        (p, partition) => {
          p.appendInt32(partition).appendInt16(INJECTED_SEND_ERROR.code).appendInt64(-1n);
          if (version >= 2) p.appendInt64(-1n); // log append time
          if (version >= 5) p.appendInt64(-1n); // log start offset
          if (version >= 8) {
            p.appendArray([] as number[], () => {}, flexible, false); // record errors: the whole batch
            p.appendString(MESSAGE, flexible);
          }
        },
        flexible,
        flexible,
      );
    },
    flexible,
    flexible,
  );
  if (version >= 1) w.appendInt32(0); // throttle time
  if (flexible) w.appendTaggedFields();
  return { frame: w.prependLength().buffer, body };
}
