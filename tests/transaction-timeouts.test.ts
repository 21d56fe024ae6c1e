/**
 * The check no-transaction-timeouts (lab-server/runner/checkers/no-transaction-timeouts.ts, read by lab-server/runner/collect/transaction-log-watch.ts) against the real
 * broker: a transaction held open past its transactionTimeout is found in __transaction_state;
 * the program's own abort, a commit, and a fence by a new producer (a restart) are not; a timeout
 * while a grader fault held the program is excused.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { FaultRecord } from '../src/shared/report.ts';
import { TransactionTimeoutWatch } from '../lab-server/runner/collect/transaction-log-watch.ts';
import { checkTransactionTimeouts } from '../lab-server/runner/checkers/no-transaction-timeouts.ts';
import { testKafka, uniqueName } from './support/kafka.ts';

describe('no-transaction-timeouts on the real broker', () => {
  const kafka = testKafka('txn-timeouts');

  it('finds a transaction rolled back by its timeout, and nothing else', async () => {
    const namespace = uniqueName('tto');
    const topic = `${namespace}-out`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const startedAt = Date.now();
    const watch = await TransactionTimeoutWatch.start(kafka, namespace, uniqueName('grader'));

    // 1. A commit and an own abort: fine.
    const good = kafka.producer({ transactionalId: `${namespace}-good`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 10_000 });
    await good.connect();
    let txn = await good.transaction();
    await txn.send({ topic, messages: [{ value: 'a' }] });
    await txn.commit();
    txn = await good.transaction();
    await txn.send({ topic, messages: [{ value: 'b' }] });
    await txn.abort();
    await good.disconnect();

    // 2. A fence by a new producer with the same id while a young transaction is open: not a timeout.
    const old = kafka.producer({ transactionalId: `${namespace}-fenced`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 10_000 });
    await old.connect();
    const held = await old.transaction();
    await held.send({ topic, messages: [{ value: 'c' }] });
    const successor = kafka.producer({ transactionalId: `${namespace}-fenced`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 10_000 });
    await successor.connect();
    await (await successor.transaction()).abort();
    await successor.disconnect();
    await old.disconnect().catch(() => {});

    // 3. A transaction held open past its 2 s timeout (the broker looks every 2 s): rolled back.
    const slow = kafka.producer({ transactionalId: `${namespace}-slow`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 2_000 });
    await slow.connect();
    const open = await slow.transaction();
    await open.send({ topic, messages: [{ value: 'd' }] });
    const slowOpenAt = Date.now() - startedAt;
    await sleep(5_500);
    await expect(open.commit()).rejects.toThrow();
    await slow.disconnect().catch(() => {});

    const byId = await watch.read();
    expect([...byId.keys()].sort()).toEqual([`${namespace}-fenced`, `${namespace}-good`, `${namespace}-slow`]);
    const result = checkTransactionTimeouts(await watch.readLog(), namespace, [], startedAt);
    expect(result.passed).toBe(false);
    expect(result.evidence).toHaveLength(1);
    expect(result.evidence[0]).toMatch(/^transaction of slow \(epoch \d+\) on out-\[0\]: open from .* rolled back by the coordinator .* its transactionTimeout being 2\.0 s$/);

    // The same timeout while the grader had killed the program: excused.
    const kill: FaultRecord = { atMs: slowOpenAt + 500, kind: 'kill', instance: 'i1', inTransaction: true };
    const excused = checkTransactionTimeouts(await watch.readLog(), namespace, [kill], startedAt);
    expect(excused.passed).toBe(true);
    expect(excused.summary).toMatch(/1 left open by a fault/);
  }, 60_000);
});
