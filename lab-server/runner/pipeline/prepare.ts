/**
 * The pipeline scenario's prepare step (and its supervisor): the lab API namespace and database (if the lab has them), the lab's topics on a whole cluster, the
 * coordinator-log watch of no-transaction-timeouts, and the seeder's producer.
 */
import { describeError } from '../../../src/shared/errors.ts';
import { labApi } from '../../api/lab-api.ts';
import { waitForBrokers } from '../../kafka/group-wait.ts';
import { createTopics } from '../../kafka/topics.ts';
import { TransactionTimeoutWatch } from '../collect/transaction-log-watch.ts';
import { AttemptDatabase } from '../database-attempt.ts';
import { Supervisor, supervisorPolicy } from '../program/supervisor.ts';
import type { PipelineState, Prepared } from './state.ts';

/** The supervisor of a pipeline's instances: each start, exit and IPC event goes to the history. */
export function pipelineSupervisor(scenario: Pick<PipelineState, 'attempt' | 'stallWatch' | 'progressTracker' | 'reachedPoints' | 'committingProducers' | 'env'>): Supervisor {
  const { attempt } = scenario;
  const history = attempt.history;
  return new Supervisor(
    () => attempt.source,
    {
      env: (slot) => scenario.env(slot),
      ownsGroup: (groupId) => attempt.ownsGroup(groupId),
      line: (instance, stream, line) => {
        scenario.stallWatch.noteLine(instance.id, line);
        attempt.sink.line(instance.id, stream, line);
      },
      started: (slot) => {
        scenario.progressTracker.started();
        history.mark('start', slot.current.id, slot.incarnation > 1 ? `incarnation ${slot.incarnation}` : undefined);
      },
      event: (slot, instance, event) => {
        if (event.t === 'member') return;
        if (instance === slot.current) {
          slot.txnOpen = event.txnOpen;
          slot.callInFlight = (event.t === 'call' || event.t === 'hit') && event.point.startsWith('before:') ? event.point.slice('before:'.length) : null;
        }
        if (event.t === 'call' || event.t === 'hit') scenario.reachedPoints.add(event.point);
        scenario.stallWatch.noteEvent(instance.id, event);
        // A commit is work getting done even when the group's offsets have not moved yet (a slow
        // machine, retries after a broker restart): it keeps the settle phase from giving up early.
        if (event.t === 'call' && (event.point === 'after:commit' || event.point === 'after:db-commit')) {
          if (attempt.phase === 'settling') scenario.progressTracker.lastActivityAt = Date.now();
          scenario.progressTracker.committed();
        }
        if (event.t === 'call' && event.point === 'after:commit') history.mark('commit', instance.id);
        if (event.t === 'call' && event.point === 'after:commit' && event.transactionalId && (event.records ?? 0) > 0 && scenario.committingProducers.size < 256) scenario.committingProducers.add(event.transactionalId);
        if (event.t === 'call' && event.point === 'after:db-commit') history.mark('commit', instance.id, 'database');
        if (event.t === 'call' && event.point === 'after:abort') history.mark('abort', instance.id);
        if (event.t === 'failed' && (event.op === 'commit' || event.op === 'sendOffsets')) history.mark('abort', instance.id, `${event.op} failed: ${event.error}`);
      },
      exited: (instance, code, signal) => history.mark('exit', instance.id, signal ? `signal ${signal}` : `code ${code}`),
      // Its members stay in their groups until their session timeout (a JVM client's default is
      // 45 s), holding up the restarted instance's join: the grader sends the LeaveGroups, as it
      // does for an instance it killed. Not waited for: the restart goes ahead as it would.
      exitedOnItsOwn: (instance, memberships) => void attempt.evictor.leave(memberships),
      changed: () => attempt.emitState(),
      stopping: () => attempt.stopping,
    },
    supervisorPolicy((line) => attempt.sink.system(line)),
  );
}

export async function preparePipeline(scenario: Pick<PipelineState, 'attempt' | 'lab' | 'writer'>): Promise<Prepared> {
  const { attempt, lab } = scenario;
  const system = (line: string) => attempt.sink.system(line);
  const api = lab.api ? (await labApi()).open(attempt.namespace) : null;
  // The lab's database (if any) is prepared while the topics are created.
  const spec = lab.database;
  const opening = spec ? AttemptDatabase.open(spec, attempt.namespace, system, attempt.options.databases) : null;
  let database: AttemptDatabase | null = null;
  let txnTimeouts: TransactionTimeoutWatch | null = null;
  let failure: unknown = null;
  try {
    // All of the grader's set-up talks to every node (replication factor 3 needs every one).
    await attempt.maintenance.withSharedWhole(async () => {
      const control = attempt.options.control;
      // A cluster of the lab server's own knows its nodes; another one (KAFKA_BROKERS) may have any number.
      const nodes = control ? (await control.nodeIds()).length : null;
      if (nodes !== null && nodes >= 2) await waitForBrokers(attempt.kafka, nodes);
      await createTopics(
        attempt.kafka,
        lab.topics.map((t) => ({
          topic: attempt.realTopic(t.name),
          numPartitions: t.partitions,
          ...(t.config ? { configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value })) } : {}),
        })),
      );
      if (attempt.options.mode !== 'run' && lab.checks.includes('no-transaction-timeouts')) {
        txnTimeouts = await TransactionTimeoutWatch.start(attempt.kafka, attempt.namespace, attempt.graderId);
      }
      await scenario.writer.connect({ oneLeader: nodes === 1 });
    });
  } catch (err) {
    failure = err;
  }
  // Always wait for the database, so one that arrives after a failure is given back too.
  const waitFrom = Date.now();
  if (opening) database = await opening.catch((err) => ((failure ??= err), null));
  // Starting an embedded database (or waiting for a free one) is not the program's time.
  attempt.notProgramTimeMs = Date.now() - waitFrom;
  if (failure) {
    api?.close();
    await database?.release().catch((err) => system(`the attempt's database could not be given back: ${describeError(err)}`));
    throw failure;
  }
  return { api, database, txnTimeouts };
}
