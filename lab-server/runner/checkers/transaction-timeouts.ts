/**
 * The check `no-transaction-timeouts`: no transaction of the program was rolled back by the
 * coordinator because it stayed open longer than its producer's transaction.timeout.ms.
 *
 * The evidence is the coordinator's own log, __transaction_state (decoded by
 * kafka/transaction-log.ts), read after the run from the offsets it had when the grade started,
 * for this attempt's transactional ids only. A timeout rollback looks like this there:
 *
 *   Ongoing (epoch e, start S)  ->  PrepareAbort (epoch e+1, start S, lastUpdate U)  ->  CompleteAbort
 *
 * with U - S >= timeoutMs: the coordinator bumped the epoch itself (a program's own abort keeps
 * its epoch) and the transaction had been open for its whole timeout. A new producer fencing an
 * open transaction (a restart after a kill) also bumps the epoch, but then the transaction is
 * younger than its timeout. A transaction left open by a grader fault (the program killed,
 * frozen, or the broker restarted while it was open) may well time out: those are not the
 * program's fault and are listed as excused, never failed.
 *
 * Why the coordinator's log rather than the program's errors: the program that timed out often
 * never sees it as such (kafkajs reports INVALID_PRODUCER_EPOCH or a fencing error, and a
 * program may swallow it), and a --cmd program has no wrapper at all. The log is the truth.
 */
import type { Admin, Kafka } from 'kafkajs';
import type { CheckResult, FaultRecord } from '../../../src/shared/report.ts';
import { retry } from '../../core/retry.ts';
import { GRADER_KAFKA_RETRY } from '../../kafka/group-offsets.ts';
import { decodeTransactionLogRecord, TRANSACTION_STATE_TOPIC, type TransactionLogValue } from '../../kafka/transaction-log.ts';
import { capEvidence } from './evidence.ts';

/** Faults that may leave a transaction open through no fault of the program's. */
const EXCUSING_FAULTS = new Set<FaultRecord['kind']>(['kill', 'stop', 'zombie', 'pause', 'broker-restart', 'coordinator-kill']);

export interface TimedOutTransaction {
  transactionalId: string;
  producerId: bigint;
  epoch: number;
  timeoutMs: number;
  startMs: number;
  abortedAtMs: number;
  partitions: string;
}

/** Finds the timeout rollbacks in a sequence of one transactional id's log values (in log order). */
export function findTimeoutAborts(transactionalId: string, values: readonly TransactionLogValue[]): TimedOutTransaction[] {
  const found: TimedOutTransaction[] = [];
  let ongoing: TransactionLogValue | null = null;
  for (const v of values) {
    if (v.state === 'Ongoing') {
      ongoing = v;
      continue;
    }
    if (v.state === 'PrepareAbort' && ongoing && v.producerId === ongoing.producerId && v.producerEpoch > ongoing.producerEpoch && v.startMs !== null) {
      // Bumped by the coordinator: a timeout, or a new producer fencing the open transaction.
      if (v.lastUpdateMs - v.startMs >= v.timeoutMs) {
        found.push({
          transactionalId,
          producerId: v.producerId,
          epoch: ongoing.producerEpoch,
          timeoutMs: v.timeoutMs,
          startMs: v.startMs,
          abortedAtMs: v.lastUpdateMs,
          partitions: (ongoing.partitions.length ? ongoing.partitions : v.partitions).map((p) => `${p.topic}-[${p.partitions.join(',')}]`).join(' '),
        });
      }
    }
    ongoing = null; // any other state ends the open transaction
  }
  return found;
}

/**
 * Remembers where __transaction_state ended when the grade started; after the run, reads from
 * there and decides the check.
 */
/**
 * The transaction log's end offsets. kafkajs's admin gives up on the first refused connection, and
 * on a 3-node cluster a node may just have been killed (its partitions not yet moved): retried.
 */
function offsetsOfTransactionLog(admin: Admin) {
  return retry(() => admin.fetchTopicOffsets(TRANSACTION_STATE_TOPIC), GRADER_KAFKA_RETRY);
}

export class TransactionTimeoutWatch {
  private constructor(
    private readonly kafka: Kafka,
    private readonly namespace: string,
    private readonly from: { partition: number; offset: string }[],
  ) {}

  static async start(kafka: Kafka, namespace: string): Promise<TransactionTimeoutWatch> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await offsetsOfTransactionLog(admin);
      return new TransactionTimeoutWatch(kafka, namespace, offsets.map((p) => ({ partition: p.partition, offset: p.high })));
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /** Every log value of this attempt's transactional ids written since start(), by id, in order. */
  async read(timeoutMs = 15_000): Promise<Map<string, TransactionLogValue[]>> {
    const byId = new Map<string, TransactionLogValue[]>();
    const admin = this.kafka.admin();
    await admin.connect();
    let ends: { partition: number; high: string }[];
    try {
      ends = await offsetsOfTransactionLog(admin);
    } finally {
      await admin.disconnect().catch(() => {});
    }
    const from = new Map(this.from.map((p) => [p.partition, Number(p.offset)]));
    const remaining = new Map(ends.filter((e) => Number(e.high) > (from.get(e.partition) ?? 0)).map((e) => [e.partition, Number(e.high)]));
    if (remaining.size === 0) return byId;
    const groupId = `${this.namespace}-txn-log-reader`;
    const consumer = this.kafka.consumer({ groupId, maxWaitTimeInMs: 100, sessionTimeout: 6_000, heartbeatInterval: 1_000 });
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const reached = (partition: number, next: number) => {
      const end = remaining.get(partition);
      if (end !== undefined && next >= end) remaining.delete(partition);
      if (remaining.size === 0) done();
    };
    // Batches of control records or of other ids still move the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => reached(payload.partition, Number(payload.lastOffset) + 1));
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: TRANSACTION_STATE_TOPIC, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          let record;
          try {
            record = decodeTransactionLogRecord(message.key, message.value);
          } catch {
            return; // a record type the decoder does not know: not ours
          }
          if (!record?.value || !record.transactionalId.startsWith(`${this.namespace}-`)) return;
          byId.set(record.transactionalId, [...(byId.get(record.transactionalId) ?? []), record.value]);
        },
      });
      for (const p of ends) consumer.seek({ topic: TRANSACTION_STATE_TOPIC, partition: p.partition, offset: String(from.get(p.partition) ?? 0) });
      await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
    } finally {
      await consumer.disconnect().catch(() => {});
      const cleanup = this.kafka.admin();
      await cleanup.connect().then(() => cleanup.deleteGroups([groupId])).catch(() => {});
      await cleanup.disconnect().catch(() => {});
    }
    if (remaining.size) throw new Error(`could not read ${TRANSACTION_STATE_TOPIC} to its end within ${timeoutMs / 1000} s`);
    return byId;
  }

  /** The attempt's part of the coordinator's log since the start, for checkTransactionTimeouts; an error if it cannot be read. */
  async readLog(): Promise<{ byId: Map<string, TransactionLogValue[]> } | { error: string }> {
    try {
      return { byId: await this.read() };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }

  /** Reads the log and decides the check (readLog, then checkTransactionTimeouts). */
  async check(faults: readonly FaultRecord[], startedAt: number): Promise<CheckResult> {
    return checkTransactionTimeouts(await this.readLog(), this.namespace, faults, startedAt);
  }
}

/**
 * no-transaction-timeouts, with evidence, from the coordinator's log (TransactionTimeoutWatch.readLog):
 * a pure function. `startedAt`: wall-clock start of the grade, to place times and faults.
 */
export function checkTransactionTimeouts(log: { byId: Map<string, TransactionLogValue[]> } | { error: string }, namespace: string, faults: readonly FaultRecord[], startedAt: number): CheckResult {
  if ('error' in log) {
    return {
      name: 'no-transaction-timeouts',
      passed: false,
      summary: `the grader could not read the coordinator's log (${log.error})`,
      evidence: [],
    };
  }
  const { byId } = log;
  const rel = (ms: number) => `+${((ms - startedAt) / 1000).toFixed(1)} s`;
  const strip = (name: string) => (name.startsWith(`${namespace}-`) ? name.slice(namespace.length + 1) : name);
  const failures: string[] = [];
  const excused: string[] = [];
  let transactions = 0;
  for (const [id, values] of byId) {
    transactions += values.filter((v) => v.state === 'Ongoing').length;
    for (const t of findTimeoutAborts(id, values)) {
      const line =
        `transaction of ${strip(id)} (epoch ${t.epoch}) on ${strip(t.partitions) || 'no partitions yet'}: open from ${rel(t.startMs)}, ` +
        `rolled back by the coordinator at ${rel(t.abortedAtMs)} after ${((t.abortedAtMs - t.startMs) / 1000).toFixed(1)} s, its transactionTimeout being ${(t.timeoutMs / 1000).toFixed(1)} s`;
      // A grader fault while it was open (a kill, a freeze, a broker restart) excuses it.
      const fault = faults.find((f) => EXCUSING_FAULTS.has(f.kind) && startedAt + f.atMs >= t.startMs - 1_000 && startedAt + f.atMs <= t.abortedAtMs);
      if (fault) excused.push(`${line} (excused: fault ${fault.kind} on ${fault.instance} at +${(fault.atMs / 1000).toFixed(1)} s left it open)`);
      else failures.push(line);
    }
  }
  const evidence = capEvidence(failures);
  return {
    name: 'no-transaction-timeouts',
    passed: failures.length === 0,
    summary:
      failures.length === 0
        ? `no transaction was rolled back by its timeout (${transactions} transactions in the coordinator's log${excused.length ? `; ${excused.length} left open by a fault timed out, which is not your program's doing` : ''})`
        : `${failures.length} transactions stayed open past their transactionTimeout and were rolled back by the coordinator (a slow call inside the transaction?)`,
    evidence: failures.length ? evidence : capEvidence(excused),
  };
}
