/**
 * Small helpers for tests that drive @platformatic/kafka against the real broker: its own
 * producers and consumers (never kafkajs), so what a test proves is that client's behaviour.
 */
import {
  Consumer,
  FetchIsolationLevels,
  Producer,
  stringDeserializers,
  stringSerializers,
  type Message,
} from '@platformatic/kafka';
import type { Admin } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import { testKafka, uniqueName } from './kafka.ts';
import { testBrokers } from './brokers.ts';
import { graderSasl } from '../../lab-server/kafka/credentials.ts';
import { createTopics } from '../../lab-server/kafka/topics.ts';

/** The grader's login in this client's terms: the broker takes SASL/PLAIN only. */
export function graderLogin() {
  const { username, password } = graderSasl() as { username: string; password: string };
  return { mechanism: 'PLAIN' as const, username, password };
}

export type StringMessage = Message<string, string, string, string>;

/** Every client a test opened, closed by closeAll in afterAll. */
export class PlatformaticClients {
  private readonly open: { close(force?: boolean): Promise<void> }[] = [];
  constructor(private readonly brokers: string[]) {}

  producer(transactionalId: string): Producer<string, string, string, string> {
    const producer = new Producer({
      clientId: uniqueName('pkafka-test'),
      bootstrapBrokers: this.brokers,
      sasl: graderLogin(),
      idempotent: true,
      transactionalId,
      serializers: stringSerializers,
      retries: 5,
      retryDelay: 200,
    });
    this.open.push(producer);
    return producer;
  }

  consumer(groupId: string, options: { isolation?: 'read_committed' | 'read_uncommitted'; sessionTimeout?: number; maxWaitTime?: number; heartbeatInterval?: number } = {}) {
    const sessionTimeout = options.sessionTimeout ?? 6_000;
    const consumer = new Consumer({
      clientId: uniqueName('pkafka-test'),
      groupId,
      bootstrapBrokers: this.brokers,
      sasl: graderLogin(),
      deserializers: stringDeserializers,
      sessionTimeout,
      rebalanceTimeout: sessionTimeout,
      heartbeatInterval: options.heartbeatInterval ?? 300,
      maxWaitTime: options.maxWaitTime ?? 100,
      isolationLevel: options.isolation === 'read_uncommitted' ? FetchIsolationLevels.READ_UNCOMMITTED : FetchIsolationLevels.READ_COMMITTED,
    });
    this.open.push(consumer);
    return consumer;
  }

  async closeAll(): Promise<void> {
    // A fenced producer or a consumer left mid-rebalance may refuse a graceful close; force it.
    await Promise.all(this.open.map((c) => c.close(true).catch(() => undefined)));
  }
}

/**
 * Reads a topic from the start with a fresh group, as the given isolation level sees it, until the
 * record whose value is `until` has arrived (then `settleMs` longer, for anything after it), or
 * for `settleMs` when `until` is not given.
 */
export async function readValues(
  clients: PlatformaticClients,
  topic: string,
  isolation: 'read_committed' | 'read_uncommitted',
  options: { until?: string; settleMs?: number; timeoutMs?: number } = {},
): Promise<string[]> {
  const consumer = clients.consumer(uniqueName('reader'), { isolation });
  const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false });
  const values: string[] = [];
  const settleMs = options.settleMs ?? 800;
  let settle: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      if (options.until === undefined) settle = setTimeout(resolve, settleMs + 1_500);
      deadline = setTimeout(() => reject(new Error(`read of ${topic} did not reach "${options.until}" (got ${JSON.stringify(values)})`)), options.timeoutMs ?? 15_000);
      stream.on('data', (m: StringMessage) => {
        values.push(m.value);
        if (m.value === options.until && !settle) settle = setTimeout(resolve, settleMs);
      });
      stream.on('error', reject);
    });
  } finally {
    clearTimeout(settle);
    clearTimeout(deadline);
    await stream.close().catch(() => undefined);
    await consumer.close(true).catch(() => undefined);
  }
  return values;
}

/** Collects a group consumer's messages as they arrive. */
export async function collect(consumer: Consumer<string, string, string, string>, topic: string) {
  const messages: StringMessage[] = [];
  const stream = await consumer.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false });
  stream.on('data', (m: StringMessage) => messages.push(m));
  return { messages, stream };
}

/** What an error says about itself: the broker's error codes sit in `errors[]` of a ProtocolError. */
export function describeFailure(err: unknown): string {
  const e = err as { message?: string; code?: string; apiCode?: number; apiId?: string; errors?: unknown[] };
  const nested = (e.errors ?? []).map(describeFailure).join(' ');
  return `${e.code ?? ''} ${e.apiId ?? ''} ${e.message ?? String(err)} ${nested}`;
}

/**
 * A test file on @platformatic/kafka: its clients (closed after the file's tests), and kafkajs's
 * admin only to observe the broker (topic creation, committed offsets). Call at the top level.
 */
export function platformaticSuite(clientId: string) {
  const kafka = testKafka(clientId);
  const brokers = testBrokers();
  const clients = new PlatformaticClients(brokers);
  let admin: Admin;
  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await clients.closeAll();
    await admin.disconnect();
  });
  return {
    kafka,
    brokers,
    clients,
    async newTopic(prefix: string, numPartitions = 1): Promise<string> {
      const topic = uniqueName(prefix);
      // The grader's own helper: it retries while a busy broker's metadata lags behind the creation.
      await createTopics(kafka, [{ topic, numPartitions }]);
      return topic;
    },
    /** Writes committed records with a transactional producer of the new client. */
    async seed(topic: string, values: string[], partition = 0): Promise<void> {
      const producer = clients.producer(uniqueName('seed'));
      const txn = await producer.beginTransaction();
      await txn.send({ messages: values.map((value) => ({ topic, key: 'k', value, partition })) });
      await txn.commit();
    },
    committedOffsets: async (groupId: string, topic: string) => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions.map((p) => p.offset),
  };
}
