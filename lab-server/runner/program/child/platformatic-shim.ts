/**
 * Stands in for `@platformatic/kafka` inside a learner's program (the bundler maps the import
 * here, as it maps `kafkajs` to kafkajs-shim.ts). It is the real client with the same additions:
 *  - the lab's settings (lab.ts `kafkajs`, written in kafkajs's terms), translated to this
 *    client's option names and applied only where the learner set nothing;
 *  - a report to the runner before and after each send, offset commit inside a transaction
 *    (Transaction.addOffset: the TxnOffsetCommit), commit and abort, and each commit outside a
 *    transaction (Consumer.commit), with the same crash-point names as kafkajs's (`sendOffsets`
 *    is addOffset), so every lab's fault plan means the same moment in either client;
 *  - the consumer's group joins, reported so the grader can take a killed member out of its group;
 *  - exit when the runner goes away, and the HTTP crash points (both in crash-points.ts).
 */
import * as real from 'platformatic-real';
import { instrument, report, transactionClosed, transactionOpened, type InstrumentOptions } from './crash-points.ts';
import { DEFAULTS_ENV } from './protocol.ts';

export * from 'platformatic-real';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface LabSettings {
  consumer?: { sessionTimeout?: number; heartbeatInterval?: number; rebalanceTimeout?: number; maxWaitTimeInMs?: number };
  producer?: Record<string, unknown>;
  client?: { retry?: { initialRetryTime?: number; retries?: number } };
}
const lab: LabSettings = JSON.parse(process.env[DEFAULTS_ENV] ?? '{}');

const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/**
 * Options every client of the program starts from (the learner's own override them).
 * Credentials the grader hands the program (KAFKA_SASL_*) belong here, next to the retry settings,
 * so Producer, Consumer and Admin all get them.
 */
const clientDefaults = (): Record<string, unknown> =>
  defined({ retries: lab.client?.retry?.retries, retryDelay: lab.client?.retry?.initialRetryTime, sasl: saslFromEnv() });

/** The attempt's Kafka login from the documented env (KAFKA_SASL_*), as the kafkajs wrapper applies it. */
function saslFromEnv(): Record<string, string> | undefined {
  const { KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: username, KAFKA_SASL_PASSWORD: password } = process.env;
  if (!mechanism || !username || !password) return undefined;
  return { mechanism: mechanism.toUpperCase(), username, password };
}

const consumerDefaults = (): Record<string, unknown> =>
  defined({
    sessionTimeout: lab.consumer?.sessionTimeout,
    heartbeatInterval: lab.consumer?.heartbeatInterval,
    rebalanceTimeout: lab.consumer?.rebalanceTimeout,
    maxWaitTime: lab.consumer?.maxWaitTimeInMs,
  });

class InjectedBrokerError extends (real.ProtocolError as Any) {
  constructor() {
    // A real protocol error of this client (retriable, as a moved leader is), so code that tells
    // errors apart by `code` / `findBy` sees what a real NOT_LEADER_OR_FOLLOWER answer gives.
    super('NOT_LEADER_OR_FOLLOWER', 'This server is not the leader for that topic-partition (injected by the grader: a leader moved)');
  }
}
const injected = () => new InjectedBrokerError() as unknown as Error;

/** The topics of a send's messages. */
const sentTopics = (args: Any[]): Set<string> =>
  new Set(((args[0]?.messages ?? []) as Any[]).map((m) => m?.topic).filter((t): t is string => typeof t === 'string'));
const countRecords = (args: Any[]) => (Array.isArray(args[0]?.messages) ? args[0].messages.length : undefined);

const common = (op: InstrumentOptions['op'], txnOpen: () => boolean): InstrumentOptions => ({ op, txnOpen, injected, callbackStyle: true });

function wrapTransaction(txn: Any): Any {
  let open = true;
  transactionOpened();
  const isOpen = () => open;
  const close = (ok: boolean) => {
    if (ok && open) {
      open = false;
      transactionClosed();
    }
  };
  // Every topic this transaction has sent to, so a crash point can be aimed at one stage.
  const written = new Set<string>();
  const soFar = () => written;
  const sendWrites = (args: Any[]) => {
    const topics = sentTopics(args);
    for (const t of topics) written.add(t);
    return topics;
  };
  instrument(txn, 'send', { ...common('send', isOpen), records: countRecords, written: sendWrites });
  instrument(txn, 'addOffset', { ...common('sendOffsets', isOpen), written: soFar });
  instrument(txn, 'commit', { ...common('commit', isOpen), after: close, written: soFar });
  instrument(txn, 'abort', { ...common('abort', isOpen), after: close, written: soFar });
  // cancel() forgets the transaction on this side without telling the broker.
  const cancel = txn.cancel;
  txn.cancel = (...args: Any[]) => {
    close(true);
    return cancel.apply(txn, args);
  };
  return txn;
}

export class Producer extends (real.Producer as Any) {
  constructor(options: Any = {}) {
    // An idempotent producer that sets no retries gets this client's own default (unlimited), as
    // in production: the lab's retry count is not applied to it.
    const { retries, ...rest } = clientDefaults();
    super({ ...rest, ...(options?.idempotent || retries === undefined ? {} : { retries }), ...options });
    // A transaction's send goes through producer.send with the transaction's mark (a symbol key):
    // report it once, as the transaction's.
    instrument(this, 'send', {
      ...common('send', () => false),
      records: countRecords,
      written: sentTopics,
      passThrough: (args) => Object.getOwnPropertySymbols(args[0] ?? {}).length > 0,
    });
    const begin = (this as Any).beginTransaction;
    (this as Any).beginTransaction = (...args: Any[]) => {
      const callback = typeof args.at(-1) === 'function' ? args.pop() : null;
      const done = (begin.apply(this, args) as Promise<Any>).then(wrapTransaction);
      if (!callback) return done;
      done.then((txn) => callback(null, txn), (err) => callback(err));
    };
  }
}

export class Consumer extends (real.Consumer as Any) {
  constructor(options: Any = {}) {
    super({ ...clientDefaults(), ...consumerDefaults(), ...options });
    instrument(this, 'commit', common('commitOffsets', () => false));
    (this as Any).on('consumer:group:join', (payload: Any) => {
      if (payload?.memberId) report({ t: 'member', groupId: payload.groupId, memberId: payload.memberId });
    });
  }
}

export class Admin extends (real.Admin as Any) {
  constructor(options: Any = {}) {
    super({ ...clientDefaults(), ...options });
  }
}

