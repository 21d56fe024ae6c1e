/**
 * Stands in for `kafkajs` inside a learner's program (the bundler aliases the import). It is the
 * real kafkajs with three additions:
 *  - the lab's kafkajs defaults, applied only where the learner set nothing;
 *  - a report to the runner before and after each send / sendOffsets / commit / abort /
 *    commitOffsets, which lets the grader stop the program at an exact crash point;
 *  - exit when the runner goes away, so no learner process outlives the grader;
 *  - crash points around the global fetch (fetch-shim.ts), for labs that call an HTTP API.
 * The crash-point machinery is shared with the @platformatic/kafka wrapper (crash-points.ts).
 */
import * as real from 'kafkajs-real';
// kafkajs's own table of protocol errors (which ones it retries), from the same copy the alias bundles.
import { errorCodes } from 'kafkajs/src/protocol/error.js';
import { DEFAULTS_ENV } from './protocol.ts';
import { instrument as instrumentWith, report, transactionClosed, transactionOpened, type InstrumentOptions } from './crash-points.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const defaults: { consumer?: Record<string, unknown>; producer?: Record<string, unknown>; client?: Record<string, unknown> } = JSON.parse(process.env[DEFAULTS_ENV] ?? '{}');

class InjectedBrokerError extends real.KafkaJSError {
  constructor() {
    super('This server is not the leader for that topic-partition (injected by the grader: a leader moved)', { retriable: true });
    (this as Any).name = 'KafkaJSProtocolError';
    (this as Any).type = 'NOT_LEADER_FOR_PARTITION';
  }
}
const injected = () => new InjectedBrokerError();

function countRecords(args: Any[]): number | undefined {
  const a = args[0];
  if (a?.messages) return a.messages.length;
  if (a?.topicMessages) return a.topicMessages.reduce((n: number, t: Any) => n + (t.messages?.length ?? 0), 0);
  return undefined;
}

/** The topics a send / sendBatch call writes to. */
function sentTopics(args: Any[]): string[] {
  const a = args[0];
  if (typeof a?.topic === 'string') return [a.topic];
  if (Array.isArray(a?.topicMessages)) return a.topicMessages.map((t: Any) => t?.topic).filter((t: unknown) => typeof t === 'string');
  return [];
}

function instrument(
  target: Any,
  method: string,
  op: InstrumentOptions['op'],
  txnOpen: () => boolean,
  after?: (ok: boolean) => void,
  written?: (args: Any[]) => ReadonlySet<string>,
) {
  instrumentWith(target, method, { op, txnOpen, injected, after, written, ...(op === 'send' ? { records: countRecords } : {}) });
}

function wrapProducer(producer: Any): Any {
  let openTransactions = 0;
  const plainOpen = () => openTransactions > 0;
  const sendWrites = (args: Any[]) => new Set(sentTopics(args));
  instrument(producer, 'send', 'send', plainOpen, undefined, sendWrites);
  instrument(producer, 'sendBatch', 'send', plainOpen, undefined, sendWrites);
  const transaction = producer.transaction.bind(producer);
  producer.transaction = async () => {
    const txn = await transaction();
    let open = true;
    openTransactions++;
    transactionOpened();
    const isOpen = () => open;
    const close = (ok: boolean) => {
      if (ok && open) {
        open = false;
        openTransactions--;
        transactionClosed();
      }
    };
    // Every topic this transaction has sent to, so a crash point can be aimed at one stage.
    const txnWrites = new Set<string>();
    const sendWrites = (args: Any[]) => {
      for (const topic of sentTopics(args)) txnWrites.add(topic);
      return new Set(sentTopics(args));
    };
    const soFar = () => txnWrites;
    instrument(txn, 'send', 'send', isOpen, undefined, sendWrites);
    instrument(txn, 'sendBatch', 'send', isOpen, undefined, sendWrites);
    instrument(txn, 'sendOffsets', 'sendOffsets', isOpen, undefined, soFar);
    instrument(txn, 'commit', 'commit', isOpen, close, soFar);
    instrument(txn, 'abort', 'abort', isOpen, close, soFar);
    return txn;
  };
  return producer;
}

function wrapConsumer(consumer: Any): Any {
  instrument(consumer, 'commitOffsets', 'commitOffsets', () => false);
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }: Any) => report({ t: 'member', groupId: payload.groupId, memberId: payload.memberId }));
  return consumer;
}

const LEVEL_NAMES: Record<number, string> = { 1: 'ERROR', 2: 'WARN', 4: 'INFO', 5: 'DEBUG' };

/**
 * The protocol errors kafkajs retries by itself (its own table marks them retriable): a
 * coordinator still writing the last transaction's markers (CONCURRENT_TRANSACTIONS), a group
 * rebalancing, a coordinator moving. kafkajs logs each at ERROR level although nothing is wrong
 * yet; a correct program would print alarming red lines on every transaction.
 */
const RETRIED_BY_KAFKAJS = new Set<string>(errorCodes.filter((e: Any) => e.retriable).map((e: Any) => e.message));

/**
 * kafkajs logs JSON by default; in a terminal one readable line per event is kinder. A retriable
 * protocol error is shown as a plain "retrying" line on stdout: the learner sees an error only
 * when the client gives up (its own ERROR line, or the exception the program gets).
 */
const readableLogCreator = () => ({ namespace, level, log }: Any) => {
  const { message, error, retryCount } = log;
  const detail = error && !String(message).includes(error) ? `: ${error}` : '';
  const retry = retryCount !== undefined ? ` (retry ${retryCount})` : '';
  const text = `${message} ${error ?? ''}`;
  if (level === 1 && [...RETRIED_BY_KAFKAJS].some((retriable) => text.includes(retriable))) {
    console.log(`kafkajs retrying [${namespace}] ${message}${detail}${retry}`);
    return;
  }
  const line = `kafkajs ${LEVEL_NAMES[level] ?? level} [${namespace}] ${message}${detail}${retry}`;
  (level <= 2 ? console.error : console.log)(line);
};

/**
 * The attempt's Kafka login, from the documented env (KAFKA_SASL_MECHANISM/USERNAME/PASSWORD), so
 * a lesson program that passes only brokers keeps working against a broker that requires SASL.
 * A program that configures sasl itself keeps its own.
 */
function saslFromEnv(): Any {
  const { KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: username, KAFKA_SASL_PASSWORD: password } = process.env;
  if (!mechanism || !username || !password) return {};
  return { sasl: { mechanism: mechanism.toLowerCase(), username, password } };
}

export class Kafka extends (real.Kafka as Any) {
  constructor(config: Any) {
    // The lab's client retry settings apply field by field where the program sets none (a program's
    // `retry: { retries: 10 }` keeps the lab's shorter backoff), as kafkajs itself merges a
    // producer's retry over the client's. Nothing else is added: a producer without its own
    // retry gets the client's, as it would in production.
    const retry = defaults.client?.retry || config?.retry ? { retry: { ...(defaults.client?.retry as object), ...config?.retry } } : {};
    super({ logLevel: real.logLevel.WARN, ...(config?.logCreator ? {} : { logCreator: readableLogCreator }), ...defaults.client, ...saslFromEnv(), ...config, ...retry });
  }
  producer(config: Any = {}) {
    return wrapProducer(super.producer({ ...defaults.producer, ...config }));
  }
  consumer(config: Any = {}) {
    return wrapConsumer(super.consumer({ ...defaults.consumer, ...config }));
  }
}

// Everything else kafkajs exports, unchanged.
export const {
  PartitionAssigners,
  AssignerProtocol,
  Partitioners,
  logLevel,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  AclResourceTypes,
  AclOperationTypes,
  AclPermissionTypes,
  ResourcePatternTypes,
  ConfigSource,
  KafkaJSError,
  KafkaJSNonRetriableError,
  KafkaJSPartialMessageError,
  KafkaJSBrokerNotFound,
  KafkaJSProtocolError,
  KafkaJSConnectionError,
  KafkaJSConnectionClosedError,
  KafkaJSRequestTimeoutError,
  KafkaJSSASLAuthenticationError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSOffsetOutOfRange,
  KafkaJSMemberIdRequired,
  KafkaJSGroupCoordinatorNotFound,
  KafkaJSNotImplemented,
  KafkaJSMetadataNotLoaded,
  KafkaJSTopicMetadataNotLoaded,
  KafkaJSStaleTopicMetadataAssignment,
  KafkaJSDeleteGroupsError,
  KafkaJSTimeout,
  KafkaJSLockTimeout,
  KafkaJSServerDoesNotSupportApiKey,
  KafkaJSUnsupportedMagicByteInMessageSet,
  KafkaJSDeleteTopicRecordsError,
  KafkaJSInvariantViolation,
  KafkaJSInvalidVarIntError,
  KafkaJSInvalidLongError,
  KafkaJSCreateTopicError,
  KafkaJSAggregateError,
  KafkaJSFetcherRebalanceError,
  KafkaJSNoBrokerAvailableError,
  KafkaJSAlterPartitionReassignmentsError,
} = real as Any;

export default { ...(real as Any), Kafka };
