/**
 * The pipeline scenario's collect step: reads what the program left (the output topics and the
 * group's offsets, the database rows, the lab API's effects, the coordinator's log) into one
 * Collected, with the grade's history, and runs the lab's checkers on them (checkers/index.ts).
 */
import { runCheckers } from '../checkers/index.ts';
import type { Collected, GradeHistory } from '../checkers/contract.ts';
import { effectRows } from '../checkers/effect-findings.ts';
import { outputMatch } from '../checkers/output-match.ts';
import { readLogStarts, readPipelineOutput } from '../collect/pipeline-output.ts';
import type { Outcome } from '../scenario.ts';
import { pipelineInconclusive } from './inconclusive.ts';
import type { Played, PlannedPipeline } from './state.ts';

export async function collectPipeline(scenario: PlannedPipeline, played: Played): Promise<Outcome> {
  const { attempt, lab, writer } = scenario;
  const { database, api, txnTimeouts } = scenario.prepared;
  const { history: timeline, maintenance } = attempt;
  const brokers = attempt.options.brokers;
  attempt.sink.system(`All instances stopped at +${(attempt.elapsed() / 1000).toFixed(1)} s; verifying the output as a read_committed consumer would see it.`);
  const realTopic = (t: string) => attempt.realTopic(t);
  const databaseRead = database && lab.database ? { spec: lab.database, read: await database.readRows() } : null;
  // no-transaction-timeouts: the coordinator's log since the start (collect/transaction-log-watch.ts).
  const transactionLog = txnTimeouts ? await maintenance.withShared(() => txnTimeouts.readLog()) : null;
  const output = await maintenance.withShared(() => readPipelineOutput({ kafka: attempt.kafka, brokers, lab, groupId: attempt.groupId, realTopic }));
  // Read after the output: a DeleteRecords racing the readers shows here at the latest.
  const logStarts = await maintenance.withShared(() => readLogStarts(brokers, lab, realTopic));
  const collected: Collected = {
    pipeline: {
      lab,
      realTopic,
      inputs: writer.written,
      output,
      logStarts,
      database: databaseRead,
      api: api && lab.api ? { spec: lab.api, effects: api.effects } : null,
      transactionLog,
      throughput: played.throughput?.check ?? null,
    },
    monitor: null,
  };
  const { stallWatch } = scenario;
  const history: GradeHistory = {
    namespace: attempt.namespace,
    startedAt: attempt.startedAt,
    faults: timeline.faults,
    stalls: { stalls: stallWatch.stalls, boundMs: stallWatch.boundMs, longestMs: stallWatch.longestMs, longestEndMs: stallWatch.longestEndMs },
    transactions: played.abandoned ? { heldAtEnd: played.heldAtEnd, ...played.abandoned } : null,
    cutOff: played.unfinished,
  };
  const abortedRecords = outputMatch(collected, history)?.abortedRecords ?? 0;
  // A transaction opened for show, beside work done outside it, is no place to test exactly-once:
  // a fault counts as inside one only when its producer committed a transaction carrying records
  // in this grade (the relay saw it), before or after. The report keeps each fault as it landed.
  const decoys = timeline.faults.filter((f) => f.inTransaction && f.producer !== undefined && !scenario.committingProducers.has(f.producer));
  const faults = timeline.faults.map((f) => (decoys.includes(f) ? { ...f, inTransaction: false } : f));
  const decoyNote = decoys.length
    ? ` ${decoys.length === 1 ? 'One fault' : `${decoys.length} faults`} held a transaction of a producer that never committed one carrying records (${[...new Set(decoys.map((f) => f.producer))].join(', ')}): not counted as inside a transaction.`
    : '';
  return {
    checks: runCheckers(lab.checks, collected, history),
    // A lab whose only output is an external effect (a database, an API) has no output log to keep intact.
    integrity: lab.topics.some((t) => t.role === 'output') ? runCheckers(['output-log-intact'], collected, history) : [],
    outputs: output.committed.length + effectRows(collected),
    abortedRecords,
    verdict: (checks) => ({
      failNote: played.timedOut ? ' The time limit was reached before all input was processed.' : '',
      // An aimed fault that never hit its point leaves what it tests untested (fault-obligations.ts).
      inconclusive: pipelineInconclusive({
        owed: scenario.obligations.inconclusiveMessage(),
        unfinished: played.unfinished,
        faultInTransaction: attempt.driver.hitTransaction(faults, abortedRecords),
        decoyNote,
      }),
      passMessage: `All ${checks.length} checks held under ${faults.length} faults (${faults.filter((f) => f.inTransaction).length} inside open transactions).${scenario.obligations.designNote()}`,
    }),
  };
}
