import kafkajs from 'kafkajs';
import type { KafkaConfig, logCreator } from 'kafkajs';
import { graderSasl } from './credentials.ts';

const { Kafka, logLevel } = kafkajs;

// kafkajs's own chatter (coordinator loading, retries) is noise for learners and tests; real
// failures still surface as rejected promises.
const quietLogger: logCreator = () => () => {};

/** A client of the grader (a super user) unless extra.sasl names another user (an attempt's, in tests). */
export function createKafka(brokers: string[], clientId = 'kafkaiq', extra: Partial<KafkaConfig> = {}) {
  return new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.NOTHING,
    logCreator: quietLogger,
    connectionTimeout: 3_000,
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2_000 },
    sasl: graderSasl(),
    ...extra,
  });
}

export { kafkajs };
