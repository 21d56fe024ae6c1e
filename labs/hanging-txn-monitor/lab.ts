import { defineLab } from '../../src/shared/lab.ts';

// A monitoring lab: the program watches the cluster and raises alerts; it transforms nothing.
// The grader (lab-server/runner/monitor-attempt.ts) keeps WATCH_TOPIC busy with short committed
// transactions, runs three look-alikes that must NOT be reported, then leaves one transaction
// hanging per 'hanging-transaction' fault and waits for the alert that names it.

export default defineLab({
  kind: 'monitor',
  title: 'Hanging-transaction monitor: name the transaction that blocks your readers',
  summary:
    'Write a monitor, not a pipeline. Watch WATCH_TOPIC and raise an alert when a transaction has been open for at least HANG_SECONDS ' +
    'AND holds back at least BLOCKED_LAG_THRESHOLD offsets of one of its partitions (blocked lag = high watermark - last stable offset). ' +
    'An alert is one record on ALERTS_TOPIC whose value is JSON {"transactionalId","topic","partition","blockedLag"}, e.g. ' +
    '{"transactionalId":"payments-7","topic":"<WATCH_TOPIC>","partition":1,"blockedLag":64} (extra fields are welcome); it must appear within ' +
    '4 s of the transaction crossing both thresholds. Stay quiet about everything else: short transactions, a slow one that commits in time, ' +
    'a long one that blocks nobody, and transactions on other topics. kafkajs has no ListTransactions/DescribeTransactions: the transactional ids ' +
    'are in the transaction coordinator\'s own log, the internal topic __transaction_state, which a kafkajs consumer can read.',
  env: [
    { name: 'KAFKA_BROKERS', description: 'Comma-separated bootstrap servers, e.g. 127.0.0.1:9092' },
    {
      name: 'WATCH_TOPIC',
      description:
        'The topic to watch (3 partitions). Several applications write it in short transactions all the time; now and then one leaves a ' +
        'transaction open. Your alerts are about this topic only, e.g. "kiq-1a2b-watch".',
    },
    {
      name: 'ALERTS_TOPIC',
      description:
        'Where your monitor writes its alerts (1 partition): one record per hanging transaction and partition, value as compact JSON, e.g. ' +
        '{"transactionalId":"payments-7","topic":"kiq-1a2b-watch","partition":1,"blockedLag":64,"openSeconds":5}. ' +
        'The key is up to you (the transactional id is a good one). Repeating an alert is fine; a plain (non-transactional) producer will do.',
    },
    { name: 'GROUP_ID', description: 'Consumer group id for your consumer; the grader starts once this group is up' },
    {
      name: 'BLOCKED_LAG_THRESHOLD',
      description: 'Integer, 25 in this lab: report only when high watermark - last stable offset of a WATCH_TOPIC partition is at least this many offsets',
    },
    {
      name: 'HANG_SECONDS',
      description: 'Integer, 4 in this lab (minutes in production): report only transactions that have been open at least this long',
    },
  ],
  topics: [
    { name: 'watch', env: 'WATCH_TOPIC', partitions: 3, role: 'input', description: 'Written by other applications in transactions; the monitor watches it' },
    { name: 'alerts', env: 'ALERTS_TOPIC', partitions: 1, role: 'output', description: 'One JSON alert per hanging transaction and partition' },
  ],
  monitor: {
    watch: 'watch',
    alerts: 'alerts',
    blockedLagThreshold: 25,
    hangSeconds: 4,
    reportWithinSeconds: 4,
    // Partition 2 stays quiet: a long transaction there blocks a single record and must not be reported.
    workload: { producers: 3, pauseMs: 150, partitions: [0, 1], recordsPerPartition: 4 },
  },
  faults: {
    // Each fault is one transaction the grader leaves hanging on a busy partition, after the look-alikes.
    full: [{ kind: 'hanging-transaction' }, { kind: 'hanging-transaction' }],
    quick: [{ kind: 'hanging-transaction' }],
  },
  checks: ['hanging-transaction-reported', 'no-false-alarms'],
  kafkajs: {
    consumer: { sessionTimeout: 3_000, heartbeatInterval: 300, rebalanceTimeout: 5_000, maxWaitTimeInMs: 100 },
    client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
  },
  timeLimitMs: 90_000,
  quickTimeLimitMs: 60_000,
});
