import kafkajs from 'kafkajs';
import type { Admin, Kafka as KafkaClient, KafkaConfig, logCreator } from 'kafkajs';
import { bestEffort } from '../core/best-effort.ts';
import { retry, type RetryOptions } from '../core/retry.ts';
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
    // About 25 s of retries: a call made while another attempt's fault restarts the broker waits
    // the restart out instead of failing the grade as an infrastructure error. A restart inside
    // the running JVM takes a few seconds; a new JVM's (after a crash, or a failed restart in
    // place) 10-11 s on 2 saturated cores. A broker that is really down is caught before a grade by
    // connectCluster's probe, which retries once.
    retry: { retries: 16, initialRetryTime: 100, maxRetryTime: 2_000 },
    sasl: graderSasl(),
    ...extra,
  });
}

/** A client opened for one task: a kafkajs admin, producer or consumer, or the internal Cluster. */
export interface TaskClient {
  connect(): Promise<unknown>;
  disconnect(): Promise<unknown>;
}

/**
 * The one way to use a Kafka client for one task: connects it, runs the task and always
 * disconnects it. A failed disconnect is logged, never thrown: the task's result or error is what
 * the caller needs. With `connect: false` the task connects the client itself (to retry
 * connecting along with its first request).
 */
export async function withClient<C extends TaskClient, T>(client: C, task: (client: C) => Promise<T>, options: { connect?: boolean } = {}): Promise<T> {
  try {
    if (options.connect !== false) await client.connect();
    return await task(client);
  } finally {
    await bestEffort('disconnect a Kafka client', () => client.disconnect());
  }
}

/** withClient with a new admin of `kafka`. */
export function withAdmin<T>(kafka: KafkaClient, task: (admin: Admin) => Promise<T>, options: { connect?: boolean } = {}): Promise<T> {
  return withClient(kafka.admin(), task, options);
}

/**
 * withAdmin for a request that may meet a broker still starting or restarting: connecting and the
 * request are retried together (core/retry.ts) until one succeeds or `retryOptions` give up.
 */
export function withAdminRetrying<T>(kafka: KafkaClient, request: (admin: Admin) => Promise<T>, retryOptions: RetryOptions): Promise<T> {
  const attempt = async (admin: Admin) => {
    await admin.connect();
    return request(admin);
  };
  return withAdmin(kafka, (admin) => retry(() => attempt(admin), retryOptions), { connect: false });
}

export { kafkajs };
