/**
 * The transactions of a namespace as their coordinators see them: Kafka's admin requests
 * ListTransactions and DescribeTransactions, which kafkajs lacks, spoken with @platformatic/kafka's
 * protocol layer. For `inspect txns`, the grader's wait for abandoned transactions, the zombie
 * fault's look at a transaction's timeout and the fencing of an attempt's ids. A listing opens at
 * most one connection per broker and closes them when it is done: a listing is rare (a few per
 * grade), and a broker restart between two leaves nothing stale behind.
 */
import { Connection, describeTransactionsV0, findCoordinatorV4, listTransactionsV0, metadataV12, ResponseError } from '@platformatic/kafka';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { retry } from '../core/retry.ts';
import { graderSasl } from './credentials.ts';

export interface TransactionInfo {
  transactionalId: string;
  state: string;
  producerId: number;
  startedAt: string | null;
  durationMs: number | null;
  /** The transaction.timeout.ms the producer registered (DescribeTransactions), when known. */
  timeoutMs: number | null;
  partitions: string[];
}

/** How long one listing may take, retries included (a coordinator loading after a restart). */
const LISTING_TIMEOUT_MS = 15_000;
/** Prefixes are namespaces ([a-z0-9-]); anything else is refused before a request is sent. */
const PREFIX = /^[A-Za-z0-9._-]{1,120}$/;
/** FindCoordinator's key type of a transactional id. */
const TRANSACTION_KEY = 1;

interface BrokerAddress {
  host: string;
  port: number;
}

function parseAddress(address: string): BrokerAddress {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

/** One listing's connections, logged in as the grader: one per broker, opened on first use. */
class Connections {
  private readonly open = new Map<string, { connection: Connection; ready: Promise<void> }>();

  async to(broker: BrokerAddress): Promise<Connection> {
    const key = `${broker.host}:${broker.port}`;
    let entry = this.open.get(key);
    if (!entry) {
      const { username, password } = graderSasl() as { username: string; password: string };
      const connection = new Connection('kafkaiq-transactions', { sasl: { mechanism: 'PLAIN', username, password }, connectTimeout: 3_000, requestTimeout: 5_000 });
      // The connect and every request fail through their own callbacks, which the listing handles.
      // The Connection also emits each failure as 'error', sometimes after the connect's listener
      // has gone (a broker dropping it mid-handshake), and an EventEmitter with no 'error' listener
      // throws out of the event loop: this one keeps that from taking the lab server down.
      connection.on('error', () => {});
      entry = { connection, ready: connection.connect(broker.host, broker.port) as Promise<void> };
      this.open.set(key, entry);
    }
    await entry.ready;
    return entry.connection;
  }

  /** Every connection opened, whether or not it connected. */
  async closeAll(): Promise<void> {
    for (const { connection } of this.open.values()) await bestEffort('closing a transactions connection', () => connection.close());
  }
}

/** Every broker of the cluster (ListTransactions answers only for the coordinators a broker leads). */
async function clusterBrokers(on: Connections, bootstrap: string[]): Promise<BrokerAddress[]> {
  let lastError: unknown = null;
  for (const address of bootstrap) {
    try {
      const metadata = await metadataV12.api.async(await on.to(parseAddress(address)), [], false, false);
      return metadata.brokers.map((b) => ({ host: b.host, port: b.port }));
    } catch (err) {
      lastError = err; // the next bootstrap address may answer
    }
  }
  throw lastError ?? new Error('no bootstrap broker');
}

type Described = Awaited<ReturnType<typeof describeTransactionsV0.api.async>>['transactionStates'][number];

/**
 * DescribeTransactions for `ids` at their coordinators. An id that ended and expired between the
 * listing and this call comes back with an error of its own: the others' answers still count.
 */
async function describe(on: Connections, brokers: BrokerAddress[], ids: string[]): Promise<Map<string, Described>> {
  const found = await findCoordinatorV4.api.async(await on.to(brokers[0]!), TRANSACTION_KEY, ids);
  const byCoordinator = new Map<string, { broker: BrokerAddress; ids: string[] }>();
  for (const coordinator of found.coordinators) {
    if (coordinator.errorCode !== 0) throw new Error(`FindCoordinator for ${coordinator.key}: error ${coordinator.errorCode}`);
    const key = `${coordinator.host}:${coordinator.port}`;
    const entry = byCoordinator.get(key) ?? { broker: { host: coordinator.host, port: coordinator.port }, ids: [] };
    entry.ids.push(coordinator.key);
    byCoordinator.set(key, entry);
  }
  const described = new Map<string, Described>();
  for (const { broker, ids: batch } of byCoordinator.values()) {
    let states: Described[];
    try {
      states = (await describeTransactionsV0.api.async(await on.to(broker), batch)).transactionStates;
    } catch (err) {
      const partial = err instanceof ResponseError ? (err as ResponseError & { response?: { transactionStates?: Described[] } }).response?.transactionStates : undefined;
      if (!partial) throw err;
      states = partial;
    }
    for (const state of states) if (state.errorCode === 0) described.set(state.transactionalId, state);
  }
  return described;
}

async function listOnce(bootstrap: string[], prefix: string): Promise<TransactionInfo[]> {
  const on = new Connections();
  try {
    return await listWith(on, bootstrap, prefix);
  } finally {
    await on.closeAll();
  }
}

async function listWith(on: Connections, bootstrap: string[], prefix: string): Promise<TransactionInfo[]> {
  const brokers = await clusterBrokers(on, bootstrap);
  const listed = (await Promise.all(brokers.map(async (b) => listTransactionsV0.api.async(await on.to(b), [], [], 0n, null)))).flatMap((r) =>
    r.transactionStates.filter((t) => t.transactionalId.startsWith(prefix)),
  );
  if (!listed.length) return [];
  const described = await describe(on, brokers, listed.map((t) => t.transactionalId));
  const now = Date.now();
  return listed.map((t) => {
    const d = described.get(t.transactionalId);
    const startMs = d ? Number(d.transactionStartTimeMs) : -1;
    return {
      transactionalId: t.transactionalId,
      state: d?.transactionState ?? t.transactionState,
      producerId: Number(d?.producerId ?? t.producerId),
      startedAt: startMs > 0 ? new Date(startMs).toISOString() : null,
      durationMs: startMs > 0 ? now - startMs : null,
      timeoutMs: d && d.transactionTimeoutMs > 0 ? d.transactionTimeoutMs : null,
      partitions: d ? d.topics.flatMap((topic) => topic.partitions.map((p) => `${topic.topic}-${p}`)) : [],
    };
  });
}

/** Open and recent transactions whose transactional id starts with the prefix. */
export async function listTransactions(brokers: string[], prefix: string): Promise<TransactionInfo[]> {
  if (!PREFIX.test(prefix)) throw new KafkaIqError('INVALID_INPUT', `Not a transactional-id prefix: "${prefix.slice(0, 40)}"`);
  try {
    // A coordinator loading after a restart, or a broker between two lives, answers again soon.
    return await retry(() => listOnce(brokers, prefix), { retries: 8, minDelayMs: 200, maxDelayMs: 2_000, timeoutMs: LISTING_TIMEOUT_MS });
  } catch (err) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `The transaction coordinator did not answer (${describeError(err)}): is Kafka running?`);
  }
}
