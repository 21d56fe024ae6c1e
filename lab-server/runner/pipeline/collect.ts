/**
 * The pipeline scenario's collect step: reads what the program left (the output topics and the
 * group's offsets, the database rows, the lab API's effects, the coordinator's log) and hands it
 * to the checkers (the lifecycle then selects the lab's checks, selectLabChecks).
 */
import { checkApiEffects } from '../checkers/api-effects.ts';
import { checkKeepsUp } from '../checkers/keeps-up.ts';
import { checkDatabaseEffects } from '../checkers/database-effects.ts';
import { checkOutputLogIntact } from '../checkers/log-start.ts';
import { partitionOffsets } from '../../kafka/inspect.ts';
import { checkPipelineOutput, readPipelineOutput } from '../checkers/pipeline-output.ts';
import { checkSagaOutcome } from '../checkers/saga-outcome.ts';
import { checkTransactionTimeouts } from '../checkers/transaction-timeouts.ts';
import type { Outcome } from '../lifecycle.ts';
import type { Played, PlannedPipeline } from './state.ts';

export async function collectPipeline(scenario: PlannedPipeline, played: Played): Promise<Outcome> {
  const { attempt, lab, writer } = scenario;
  const { database, api, txnTimeouts } = scenario.prepared;
  const system = (line: string) => attempt.sink.system(line);
  const { history, maintenance } = attempt;
  system(`All instances stopped at +${(attempt.elapsed() / 1000).toFixed(1)} s; verifying the output as a read_committed consumer would see it.`);
  const inputs = writer.written;
  // Labs with a database: the effects, counted in the database itself.
  const effects = database && lab.database ? checkDatabaseEffects(lab.database, lab, inputs, await database.readRows()) : null;
  // no-transaction-timeouts: the coordinator's log since the start (transaction-timeouts.ts).
  const timeoutCheck = txnTimeouts ? checkTransactionTimeouts(await maintenance.withShared(() => txnTimeouts.readLog()), attempt.namespace, history.faults, attempt.startedAt) : null;
  const realTopic = (t: string) => attempt.realTopic(t);
  const read = await maintenance.withShared(() => readPipelineOutput({ kafka: attempt.kafka, brokers: attempt.options.brokers, lab, groupId: attempt.groupId, realTopic }));
  const verification = checkPipelineOutput(read, {
    lab,
    realTopic,
    inputs,
    faults: history.faults,
    startedAt: attempt.startedAt,
    transactions: played.abandoned ? { heldAtEnd: played.heldAtEnd, ...played.abandoned } : null,
    extraChecks: [
      ...(played.throughput ? [played.throughput.check] : []),
      ...(timeoutCheck ? [timeoutCheck] : []),
      checkKeepsUp(scenario.stallWatch.stalls, scenario.stallWatch.boundMs, scenario.stallWatch.longestMs, scenario.stallWatch.longestEndMs),
      // Labs that call the lab API: the effects it applied, against what the committed inputs ask for.
      ...(api && lab.api ? checkApiEffects({ api: lab.api, effects: api.effects, inputs, faults: history.faults, startedAt: attempt.startedAt }) : []),
      // Saga labs: each started saga, as the effects of its order.
      ...(api && lab.api?.service === 'saga' ? [checkSagaOutcome({ api: lab.api, effects: api.effects, inputs })] : []),
      // Labs with a database: the rows the program left, against what the committed inputs ask for.
      ...(effects?.checks ?? []),
    ],
  });
  const outputs = verification.outputs + (effects ? effects.rows : 0);
  // Read after the output: a DeleteRecords racing the readers shows here at the latest.
  const logStarts = await maintenance.withShared(async () => {
    const starts = [];
    for (const t of lab.topics.filter((topic) => topic.role === 'output')) {
      for (const p of await partitionOffsets(attempt.options.brokers, realTopic(t.name))) starts.push({ topic: t.name, partition: p.partition, logStart: p.logStart });
    }
    return starts;
  });
  const faults = history.faults;
  return {
    checks: verification.checks,
    integrity: [checkOutputLogIntact(logStarts)],
    outputs,
    abortedRecords: verification.abortedRecords,
    verdict: (checks) => ({
      failNote: played.timedOut ? ' The time limit was reached before all input was processed.' : '',
      // An aimed fault that never hit its point leaves what it tests untested (fault-obligations.ts).
      inconclusive:
        scenario.obligations.inconclusiveMessage() ??
        (attempt.driver.hitTransaction(faults, verification.abortedRecords)
          ? null
          : `All checks held, but no fault landed inside an open transaction, so exactly-once was not really tested: grade again (another seed).`),
      passMessage: `All ${checks.length} checks held under ${faults.length} faults (${faults.filter((f) => f.inTransaction).length} inside open transactions).${scenario.obligations.designNote()}`,
    }),
  };
}
