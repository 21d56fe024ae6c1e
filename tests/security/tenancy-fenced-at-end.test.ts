/**
 * An attempt's transactional ids are fenced when it ends: a program that leaves a transaction
 * open (with the longest timeout it can ask for) and is stopped leaves nothing open behind it. The
 * grader's InitProducerId for the id aborts the transaction at once, so the output's LSO reaches
 * its high watermark within seconds instead of after the transaction timeout.
 */
import { describe, expect, it } from 'vitest';
import { partitionOffsets } from '../../lab-server/kafka/inspect.ts';
import { listTransactions } from '../../lab-server/kafka/transactions.ts';
import { fenceTransactionalIds } from '../../lab-server/kafka/fence.ts';
import { innocentGrade, runAttack } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

describe("an attempt's transactional ids at its end", () => {
  it('are fenced: a transaction the program left open is aborted when the attempt ends; a concurrent grade passes', async () => {
    const victim = await innocentGrade(brokers);
    let attacker = '';
    const result = await runAttack(brokers, 'hold-transaction-open', victim.namespace, {}, 40_000, (ns) => (attacker = ns));
    expect(result.refusal).toBe('holding a transaction open');
    // runAttack returned after the attempt ended (and its topics were deleted): nothing of it is open.
    const open = (await listTransactions(brokers, attacker)).filter((t) => t.state === 'Ongoing');
    expect(open, JSON.stringify(open)).toEqual([]);
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 120_000);

  it('costs little: fencing a handful of ids takes well under the bound', async () => {
    const victim = await innocentGrade(brokers);
    await victim.report;
    const started = performance.now();
    const result = await fenceTransactionalIds(brokers, victim.namespace, [`${victim.namespace}-tx-1`]);
    const ms = performance.now() - started;
    expect(result.failed).toEqual([]);
    expect(result.timedOut).toBe(false);
    expect(ms).toBeLessThan(8_000);
    console.log(`fenced ${result.fenced.length} id(s) in ${Math.round(ms)} ms`);
  }, 120_000);

  it("names every id it could not fence when the broker does not answer, and never throws (an attempt's end goes on)", async () => {
    // Nothing listens on port 1: the state of a broker down for another grade's restart.
    const result = await fenceTransactionalIds(['127.0.0.1:1'], 'kiq_down', ['kiq_down-tx-1', 'kiq_down-tx-2'], 4_000);
    expect(result.fenced).toEqual([]);
    expect(result.failed.map((f) => f.id).sort()).toEqual(['kiq_down-tx-1', 'kiq_down-tx-2']);
    expect(result.failed[0]!.error).toMatch(/ECONNREFUSED|Connection/i);
  }, 30_000);
});
