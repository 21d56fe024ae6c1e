/**
 * The monitoring lab's grader pieces: the __transaction_state decoder (against the real broker's
 * own records, and hand-built version-0 records), and the rules that turn alerts into the
 * hanging-transaction-reported and no-false-alarms checks. The whole grade runs in labs.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin } from 'kafkajs';
import {
  decodeTransactionLogKey,
  decodeTransactionLogRecord,
  decodeTransactionLogValue,
  TRANSACTION_STATE_TOPIC,
  TransactionLogFormatError,
} from '../lab-server/kafka/transaction-log.ts';
import { loadLab } from '../lab-server/labs/load-lab.ts';
import { checkMonitorAlerts, parseAlert, type HangIncident, type MonitorJudgeInput } from '../lab-server/runner/checkers/monitor-alerts.ts';
import { testKafka, uniqueName } from './support/kafka.ts';

describe('__transaction_state on the real broker', () => {
  const kafka = testKafka('monitor-grading');
  let admin: Admin;
  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin.disconnect();
  });

  it('decodes the coordinator records of one transactional id through Empty, Ongoing (with its partitions) and commit', async () => {
    const topic = uniqueName('txlog');
    const transactionalId = uniqueName('txlog-id');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const from = await admin.fetchTopicOffsets(TRANSACTION_STATE_TOPIC);
    const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 45_000 });
    await producer.connect();
    const before = Date.now();
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ value: 'a', partition: 1 }] });
    await txn.commit();
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniqueName('txlog-reader'), maxWaitTimeInMs: 100 });
    const states: NonNullable<ReturnType<typeof decodeTransactionLogRecord>>[] = [];
    let seenCommit: () => void = () => {};
    const committed = new Promise<void>((resolve) => (seenCommit = resolve));
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: TRANSACTION_STATE_TOPIC, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            const record = decodeTransactionLogRecord(m.key, m.value);
            if (record?.transactionalId !== transactionalId) continue;
            states.push(record);
            if (record.value?.state === 'CompleteCommit') seenCommit();
          }
        },
      });
      for (const p of from) consumer.seek({ topic: TRANSACTION_STATE_TOPIC, partition: p.partition, offset: p.offset });
      await Promise.race([committed, new Promise((_, reject) => setTimeout(() => reject(new Error(`no CompleteCommit; saw ${states.map((s) => s.value?.state)}`)), 20_000))]);
    } finally {
      await consumer.disconnect();
    }

    const names = states.map((s) => s.value!.state);
    expect(names).toEqual(['Empty', 'Ongoing', 'PrepareCommit', 'CompleteCommit']);
    const [empty, ongoing] = states.map((s) => s.value!);
    expect(empty!.startMs).toBeNull();
    expect(empty!.timeoutMs).toBe(45_000);
    expect(ongoing!.partitions).toEqual([{ topic, partitions: [1] }]);
    expect(ongoing!.startMs).toBeGreaterThanOrEqual(before - 1_000);
    expect(ongoing!.startMs).toBeLessThanOrEqual(Date.now());
    expect(ongoing!.producerId).toBe(empty!.producerId);
    expect(states.at(-1)!.value!.partitions).toEqual([]);
  });
});

describe('__transaction_state decoding by hand', () => {
  /** A version-0 value: classic int16 string lengths and int32 array lengths, no tagged fields. */
  function v0Value(): Buffer {
    const topic = Buffer.from('orders');
    const parts = [
      Buffer.from([0, 0]), // version 0
      Buffer.from('00000000000000070003000093e001', 'hex'), // producerId 7, epoch 3, timeout 37856, state 1 (Ongoing)
      Buffer.from('00000001', 'hex'), // one topic
      Buffer.from([0, topic.length]),
      topic,
      Buffer.from('000000020000000000000002', 'hex'), // partitions [0, 2]
      Buffer.alloc(8, 0), // last update
      Buffer.from('0000000000000064', 'hex'), // start 100
    ];
    const b = Buffer.concat(parts);
    b.writeBigInt64BE(200n, b.length - 16);
    return b;
  }

  it('reads version 0 values', () => {
    expect(decodeTransactionLogValue(v0Value())).toEqual({
      version: 0,
      producerId: 7n,
      producerEpoch: 3,
      timeoutMs: 37_856,
      state: 'Ongoing',
      partitions: [{ topic: 'orders', partitions: [0, 2] }],
      lastUpdateMs: 200,
      startMs: 100,
    });
  });

  it('treats tombstones, other record types and damaged values as such', () => {
    expect(decodeTransactionLogValue(null)).toBeNull();
    expect(decodeTransactionLogKey(Buffer.from('00010003616263', 'hex'))).toBeNull();
    expect(decodeTransactionLogKey(Buffer.from('00000003616263', 'hex'))).toBe('abc');
    expect(() => decodeTransactionLogValue(v0Value().subarray(0, 20))).toThrow(TransactionLogFormatError);
    const future = v0Value();
    future.writeInt16BE(9, 0);
    expect(() => decodeTransactionLogValue(future)).toThrow(/version 9/);
  });
});

describe('monitor checks', () => {
  const watch = 'ns-watch';
  const incident: HangIncident = {
    n: 1,
    transactionalId: 'ns-app-7',
    partition: 1,
    openedAtMs: 10_000,
    offset: 200,
    qualifiesAtMs: 14_000,
    deadlineMs: 18_000,
    endedAtMs: 19_000,
    lagAtQualify: 80,
    maxLag: 120,
    created: true,
  };
  const input = (alerts: { atMs: number; value: object | string }[], extra: Partial<MonitorJudgeInput> = {}): MonitorJudgeInput => ({
    watchTopic: watch,
    threshold: 25,
    hangSeconds: 4,
    reportWithinSeconds: 4,
    incidents: [incident],
    lookAlikes: [
      { transactionalId: 'ns-app-6', why: 'a slow but healthy transaction' },
      { transactionalId: 'ns-billing-5', why: "hanging on another team's topic" },
    ],
    alerts: alerts.map((a, offset) => ({ atMs: a.atMs, offset, value: typeof a.value === 'string' ? a.value : JSON.stringify(a.value) })),
    quietSummary: 'the look-alikes',
    ...extra,
  });
  const alert = (over: object = {}) => ({ transactionalId: 'ns-app-7', topic: watch, partition: 1, blockedLag: 90, ...over });
  const verdicts = (i: MonitorJudgeInput) => {
    const { checks } = checkMonitorAlerts(i);
    return [checks.get('hanging-transaction-reported')!.passed, checks.get('no-false-alarms')!.passed];
  };

  it('passes a timely alert with the id, partition and a plausible lag (repeats allowed)', () => {
    expect(verdicts(input([{ atMs: 14_600, value: alert() }, { atMs: 15_600, value: alert({ blockedLag: '110' }) }]))).toEqual([true, true]);
  });

  it('fails a missing, late, low or implausible alert, and says what was expected and seen', () => {
    const none = checkMonitorAlerts(input([])).checks.get('hanging-transaction-reported')!;
    expect(none.passed).toBe(false);
    expect(none.evidence.join('\n')).toMatch(/expected between \+14\.0 s and \+18\.0 s an alert naming ns-app-7.*\n.*no alert about it at all/);
    expect(verdicts(input([{ atMs: 18_500, value: alert() }]))).toEqual([false, true]);
    expect(verdicts(input([{ atMs: 15_000, value: alert({ blockedLag: 3 }) }]))).toEqual([false, true]);
    expect(verdicts(input([{ atMs: 15_000, value: alert({ blockedLag: 5_000 }) }]))).toEqual([false, true]);
    expect(verdicts(input([{ atMs: 15_000, value: alert({ partition: 0 }) }]))).toEqual([false, true]);
  });

  it('counts an unnamed alert at the right place as a true alarm with a wrong name', () => {
    const judged = checkMonitorAlerts(input([{ atMs: 15_000, value: alert({ transactionalId: 'producer-17' }) }]));
    expect(judged.checks.get('hanging-transaction-reported')!.evidence.join('\n')).toMatch(/names "producer-17", not the transactional id/);
    expect(judged.checks.get('no-false-alarms')!.passed).toBe(true);
  });

  it('flags look-alikes, premature, stale, foreign and unreadable alerts as false alarms', () => {
    const cases: [object | string, number, RegExp][] = [
      [alert({ transactionalId: 'ns-app-6' }), 8_000, /slow but healthy/],
      [alert({ transactionalId: 'ns-billing-5', topic: 'ns-other-team' }), 15_000, /another team/],
      [alert(), 12_000, /premature: ns-app-7 had been open 2\.0 s/],
      [alert(), 23_000, /stale: ns-app-7 was fenced/],
      [alert({ transactionalId: 'x', topic: 'elsewhere' }), 15_000, /not about WATCH_TOPIC/],
      [alert({ transactionalId: 'x', partition: 2 }), 15_000, /no transaction was hanging on partition 2/],
      ['ALERT ns-app-7 is stuck', 15_000, /unreadable: the value is not JSON/],
    ];
    for (const [value, atMs, why] of cases) {
      const check = checkMonitorAlerts(input([{ atMs, value }])).checks.get('no-false-alarms')!;
      expect(check.passed, String(why)).toBe(false);
      expect(check.evidence.join('\n')).toMatch(why);
    }
  });

  it('parses alerts strictly but accepts numeric strings', () => {
    expect(parseAlert('{"transactionalId":"a","topic":"t","partition":"2","blockedLag":"30"}')).toEqual({ alert: { transactionalId: 'a', topic: 't', partition: 2, blockedLag: 30 } });
    expect(parseAlert('{"transactionalId":"a","topic":"t","partition":2}')).toEqual({ problem: 'missing blockedLag' });
    expect(parseAlert('[1]')).toEqual({ problem: 'the value is not a JSON object' });
    expect(parseAlert(null)).toEqual({ problem: 'the record has no value' });
  });

  it('loads the monitoring lab as kind "monitor" with only the monitor checks', async () => {
    const lab = await loadLab('hanging-txn-monitor');
    expect(lab.definition.kind).toBe('monitor');
    expect(lab.definition.checks).toEqual(['hanging-transaction-reported', 'no-false-alarms']);
    expect(lab.broken.length).toBeGreaterThanOrEqual(3);
    expect((await loadLab('single-stage')).definition.kind).toBe('pipeline');
  });
});
