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
import { uniqueName } from './kafka.ts';
import { graderSasl } from '../../lab-server/kafka/credentials.ts';

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
