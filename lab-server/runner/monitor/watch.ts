/**
 * The monitor scenario's eyes: one consumer of the grader's own, on the alerts topic from its
 * start (read_committed, as an alerting bridge would read it, LogAppendTime so the broker stamps
 * when each alert was written) and on the coordinator's log (__transaction_state) from the start
 * of the attempt on, for our own transactional ids only.
 */
import { bestEffort } from '../../core/best-effort.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Consumer, Kafka } from 'kafkajs';
import { retry } from '../../core/retry.ts';
import { isRetriableKafkaError } from '../../kafka/group-offsets.ts';
import type { OffsetsProbe } from '../../kafka/inspect.ts';
import { decodeTransactionLogRecord, TRANSACTION_STATE_TOPIC } from '../../kafka/transaction-log.ts';
import type { AlertSeen } from '../checkers/monitor-alerts.ts';

/** A state change of one transactional id in the coordinator's log. */
export interface CoordinatorState {
  atMs: number;
  state: string;
  partitions: string;
  startMs: number | null;
}

/** Whether an alert record names this transactional id (its JSON's transactionalId). */
export function namesId(alert: AlertSeen, id: string): boolean {
  try {
    return JSON.parse(alert.value ?? '')?.transactionalId === id;
  } catch {
    return false; // not JSON: it names nobody
  }
}

export class AlertWatch {
  readonly alerts: AlertSeen[] = [];
  /** What the coordinator's log said about our own transactional ids: state changes, in order. */
  readonly coordinator = new Map<string, CoordinatorState[]>();
  private consumer: Consumer | null = null;
  private alertsPosition = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly namespace: string,
    /** The grader's prefix (lifecycle graderId): its group stays outside the learner's grants. */
    private readonly graderId: string,
    private readonly alertsTopic: string,
    private readonly startedAt: () => number,
    /** A new alert, to echo to the learner. */
    private readonly onAlert: (alert: AlertSeen) => void,
  ) {}

  /**
   * Starts reading; stateOffsets: where __transaction_state ended when the attempt's topics were
   * created. Right after that creation, or just after a parallel grade's broker restart, the broker
   * may not host the new topic or __transaction_state yet (UNKNOWN_TOPIC_OR_PARTITION, "This server
   * does not host this topic-partition", which would end the grade as an error): retriable answers
   * start the consumer again.
   */
  async start(stateOffsets: { partition: number; offset: string }[]): Promise<void> {
    await retry(
      async () => {
        try {
          await this.startOnce(stateOffsets);
        } catch (err) {
          await this.close();
          throw err;
        }
      },
      { retries: 8, minDelayMs: 200, maxDelayMs: 2_000, shouldRetry: isRetriableKafkaError },
    );
  }

  private async startOnce(stateOffsets: { partition: number; offset: string }[]): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: `${this.graderId}-monitor`,
      sessionTimeout: 6_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: 100,
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topics: [this.alertsTopic, TRANSACTION_STATE_TOPIC], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.topic === this.alertsTopic) {
          for (const m of batch.messages) this.alert(Number(m.offset), Number(m.timestamp), m.value?.toString() ?? null);
          this.alertsPosition = Math.max(this.alertsPosition, Number(batch.lastOffset()) + 1);
          return;
        }
        for (const m of batch.messages) {
          let record;
          try {
            record = decodeTransactionLogRecord(m.key, m.value);
          } catch {
            continue; // a record type this decoder does not know: not ours to judge
          }
          if (!record?.value || !record.transactionalId.startsWith(`${this.namespace}-`)) continue;
          const states = this.coordinator.get(record.transactionalId) ?? [];
          const partitions = record.value.partitions.map((p) => `${p.topic.startsWith(this.namespace) ? p.topic.slice(this.namespace.length + 1) : p.topic}-[${p.partitions.join(',')}]`).join(' ');
          const startedAt = this.startedAt();
          if (states.at(-1)?.state !== record.value.state) {
            states.push({ atMs: Number(m.timestamp) - startedAt, state: record.value.state, partitions, startMs: record.value.startMs === null ? null : record.value.startMs - startedAt });
          }
          this.coordinator.set(record.transactionalId, states);
        }
      },
    });
    for (const p of stateOffsets) consumer.seek({ topic: TRANSACTION_STATE_TOPIC, partition: p.partition, offset: p.offset });
  }

  private alert(offset: number, timestamp: number, value: string | null): void {
    if (this.alerts.some((a) => a.offset === offset)) return;
    const alert = { atMs: timestamp - this.startedAt(), offset, value };
    this.alerts.push(alert);
    this.onAlert(alert);
  }

  /** Waits until the grader has read the alerts topic to its end (all alerts counted). */
  async catchUp(probe: OffsetsProbe, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      try {
        const [end] = await probe.offsets(this.alertsTopic);
        if (!end || this.alertsPosition >= end.lso) return;
      } catch {
        // the broker is busy: try again
      }
      await sleep(150);
    }
  }

  async close(): Promise<void> {
    await bestEffort('disconnect the alert watch', async () => this.consumer?.disconnect());
  }
}
