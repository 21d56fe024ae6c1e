import kafkajs from 'kafkajs';
import type { KafkaConfig, logCreator } from 'kafkajs';

const { Kafka, logLevel } = kafkajs;

// kafkajs's own chatter (coordinator loading, retries) is noise for learners and tests; real
// failures still surface as rejected promises.
const quietLogger: logCreator = () => () => {};

export function createKafka(brokers: string[], clientId = 'kafkaiq', extra: Partial<KafkaConfig> = {}) {
  return new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.NOTHING,
    logCreator: quietLogger,
    connectionTimeout: 3_000,
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2_000 },
    ...extra,
  });
}

export { kafkajs };
