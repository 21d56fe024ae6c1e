/**
 * The coordinator's log of an attempt's transactional ids (__transaction_state, decoded by
 * kafka/transaction-log.ts), for the check no-transaction-timeouts (checkers/no-transaction-timeouts.ts).
 */
import type { Admin, Kafka } from 'kafkajs';
import { describeError, KafkaIqError } from '../../../src/shared/errors.ts';
import { bestEffort } from '../../core/best-effort.ts';
import { retry } from '../../core/retry.ts';
import { withAdmin, withClient } from '../../kafka/client.ts';
import { GRADER_KAFKA_RETRY } from '../../kafka/group-offsets.ts';
import { decodeTransactionLogRecord, TRANSACTION_STATE_TOPIC, type TransactionLogValue } from '../../kafka/transaction-log.ts';

/**
 * The transaction log's end offsets. kafkajs's admin gives up on the first refused connection, and
 * on a 3-node cluster a node may just have been killed (its partitions not yet moved): retried.
 */
function offsetsOfTransactionLog(admin: Admin) {
  return retry(() => admin.fetchTopicOffsets(TRANSACTION_STATE_TOPIC), GRADER_KAFKA_RETRY);
}

/** Remembers where __transaction_state ended when the grade started; after the run, reads the attempt's part from there. */
export class TransactionTimeoutWatch {
  private constructor(
    private readonly kafka: Kafka,
    private readonly namespace: string,
    /** The grader's prefix (lifecycle graderId): its reader group stays outside the learner's grants. */
    private readonly graderId: string,
    private readonly from: { partition: number; offset: string }[],
  ) {}

  static async start(kafka: Kafka, namespace: string, graderId: string): Promise<TransactionTimeoutWatch> {
    const offsets = await withAdmin(kafka, offsetsOfTransactionLog);
    return new TransactionTimeoutWatch(kafka, namespace, graderId, offsets.map((p) => ({ partition: p.partition, offset: p.high })));
  }

  /** Every log value of this attempt's transactional ids written since start(), by id, in order. */
  async read(timeoutMs = 15_000): Promise<Map<string, TransactionLogValue[]>> {
    const byId = new Map<string, TransactionLogValue[]>();
    const ends = await withAdmin(this.kafka, offsetsOfTransactionLog);
    const from = new Map(this.from.map((p) => [p.partition, Number(p.offset)]));
    const remaining = new Map(ends.filter((e) => Number(e.high) > (from.get(e.partition) ?? 0)).map((e) => [e.partition, Number(e.high)]));
    if (remaining.size === 0) return byId;
    const groupId = `${this.graderId}-txn-log-reader`;
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
      await withClient(consumer, async () => {
        await consumer.subscribe({ topic: TRANSACTION_STATE_TOPIC, fromBeginning: true });
        await consumer.run({
          autoCommit: false,
          eachMessage: async ({ message }) => {
            let record;
            try {
              record = decodeTransactionLogRecord(message.key, message.value);
            } catch {
              return; // a record type the decoder does not know is no transaction of the attempt's
            }
            if (!record?.value || !record.transactionalId.startsWith(`${this.namespace}-`)) return;
            byId.set(record.transactionalId, [...(byId.get(record.transactionalId) ?? []), record.value]);
          },
        });
        for (const p of ends) consumer.seek({ topic: TRANSACTION_STATE_TOPIC, partition: p.partition, offset: String(from.get(p.partition) ?? 0) });
        await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
      });
    } finally {
      await bestEffort(`delete the group ${groupId}`, withAdmin(this.kafka, (admin) => admin.deleteGroups([groupId])));
    }
    if (remaining.size) throw new KafkaIqError('TIMEOUT', `could not read ${TRANSACTION_STATE_TOPIC} to its end within ${timeoutMs / 1000} s`);
    return byId;
  }

  /** The attempt's part of the coordinator's log since the start; an error if it cannot be read. */
  async readLog(): Promise<{ byId: Map<string, TransactionLogValue[]> } | { error: string }> {
    try {
      return { byId: await this.read() };
    } catch (err) {
      return { error: describeError(err) };
    }
  }
}
