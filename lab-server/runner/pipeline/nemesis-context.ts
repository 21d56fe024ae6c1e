/**
 * The pipeline's NemesisContext: what the fault handlers and the program driver see of a grade,
 * grouped by role (nemesis/context.ts). Built once per attempt from the scenario's parts; every
 * member reads the parts live (a getter), so the handlers see the grade as it is now.
 */
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { FaultRecord } from '../../../src/shared/report.ts';
import { describeError } from '../../../src/shared/errors.ts';
import { findTransactionCoordinator, waitForFullIsr } from '../../kafka/coordinator.ts';
import { waitForStableGroup } from '../../kafka/group-wait.ts';
import { brokerSeesOpenTransaction } from '../../kafka/open-transaction.ts';
import { listTransactions } from '../../kafka/transactions.ts';
import type { AimedHit, OpenTransactionNow, ProgramDriver } from '../driver/contract.ts';
import { untilDeadline } from '../driver/until-deadline.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { AttemptLifecycle } from '../lifecycle.ts';
import { insideUnitOfWork } from '../nemesis/api-faults.ts';
import type { NemesisContext } from '../nemesis/context.ts';
import type { Supervisor } from '../program/supervisor.ts';
import type { InputWriter, SeedTransaction } from '../seeder.ts';
import type { PipelineLiveness } from './liveness.ts';
import { takeWave, type GradePlan } from './plan.ts';
import type { PipelineProgress } from './progress.ts';
import type { Prepared } from './state.ts';

export interface NemesisParts {
  readonly attempt: AttemptLifecycle;
  readonly lab: PipelineLab;
  readonly supervisor: Supervisor;
  readonly progressTracker: PipelineProgress;
  readonly writer: InputWriter;
  readonly liveness: PipelineLiveness;
  readonly prepared: Prepared;
  /** null before plan() (a Run has none). */
  readonly gradePlan: GradePlan | null;
  env(slot: number): Record<string, string>;
}

export function pipelineNemesisContext(parts: NemesisParts): NemesisContext {
  const { attempt, lab, supervisor, progressTracker, writer } = parts;
  const brokers = attempt.options.brokers;
  const realTopic = (logical: string) => attempt.realTopic(logical);
  const system = (line: string) => attempt.sink.system(line);
  // No fault fires past the time limit (until-deadline.ts).
  // Built on first use: the context exists from the first progress report, before the program compiled.
  let driver: ProgramDriver | null = null;
  return {
    lab,
    get api() {
      return parts.prepared.api;
    },
    program: {
      get driver() {
        return (driver ??= untilDeadline(attempt.driver, () => attempt.deadline));
      },
      get stopping() {
        return attempt.stopping;
      },
      get slots() {
        return supervisor.slots.values();
      },
      slot: (n) => supervisor.slot(n),
      startSlot: (n) => supervisor.start(n),
      get nextSlot() {
        return supervisor.nextSlot;
      },
      expectExit: (instance) => supervisor.expectExit(instance),
      addZombie: (instance) => void supervisor.zombies.add(instance),
      removeZombie: (instance) => void supervisor.zombies.delete(instance),
      hasMemberships: (instance) => supervisor.members.has(instance),
      // A SIGKILLed consumer sends no LeaveGroup, so its replacement's join would wait out the dead
      // member's session timeout. Only the attempt's own groups, over the attempt's one client.
      removeFromGroups: (instance) => attempt.evictor.leave(supervisor.members.get(instance) ?? []),
      awaitStableGroup: async (members, timeoutMs) => {
        // false (not in time) or null (the broker is restarting): the fault goes on regardless.
        await waitForStableGroup(attempt.kafka, attempt.groupId, () => members, timeoutMs);
      },
      env: (slot) => parts.env(slot),
      letStallShow: () => parts.liveness.letStallShow(),
    },
    input: {
      get committedWritten() {
        return writer.written.filter((r) => r.committed).length;
      },
      get processed() {
        return progressTracker.processed;
      },
      freshProcessed: () => progressTracker.fresh(),
      writeWave: (wave) => writeWave(attempt, writer, wave),
      nextWave: (forOwedFault = false) => (parts.gradePlan ? takeWave(parts.gradePlan.waves, forOwedFault) : []),
    },
    cluster: {
      brokers,
      control: attempt.options.control,
      maintenance: attempt.maintenance,
      realTopic,
      findTransactionCoordinator: (transactionalId) => findTransactionCoordinator(brokers, transactionalId),
      waitForFullIsr: (timeoutMs) => waitForFullIsr(brokers, timeoutMs),
      // Was a transaction open? The broker knows (LSO < HWM on a topic the program writes).
      brokerSaysTransactionOpen: () => brokerSeesOpenTransaction(progressTracker.probe, lab.topics.filter((t) => t.role !== 'input').map((t) => realTopic(t.name))),
      earliestTransactionExpiry: () => earliestTransactionExpiry(brokers, attempt.namespace, system),
    },
    record: { fault: (fault, instance, event, txnOpen, note) => recordFault(parts, fault, instance, event, txnOpen, note) },
    log: { system, emitState: () => attempt.emitState() },
  };
}

async function writeWave(attempt: AttemptLifecycle, writer: InputWriter, wave: SeedTransaction[]): Promise<void> {
  if (!wave.length) return;
  await attempt.maintenance.withShared(() => writer.write(wave));
  attempt.history.mark('wave', 'grader', `${wave.reduce((n, t) => n + t.records.length, 0)} records`);
}

async function earliestTransactionExpiry(brokers: string[], namespace: string, system: (line: string) => void): Promise<number | null> {
  try {
    const open = (await listTransactions(brokers, namespace)).filter((t) => t.state === 'Ongoing' && t.startedAt && t.timeoutMs);
    return open.length ? Math.min(...open.map((t) => Date.parse(t.startedAt!) + t.timeoutMs!)) : null;
  } catch (err) {
    system(`could not ask the broker when the open transactions expire (${describeError(err)})`);
    return null;
  }
}

/** Records a landed fault: the history, the report's fault list, the workbench and the terminal. */
export function recordFault(
  parts: Pick<NemesisParts, 'attempt' | 'lab' | 'liveness' | 'gradePlan'>,
  fault: Pick<PlannedFault, 'kind'> & Partial<Pick<PlannedFault, 'points' | 'attempt' | 'ordinal' | 'path' | 'unannounced'>>,
  instance: string,
  event: (Pick<AimedHit, 'point' | 'txnOpen' | 'transactionalId'> & { aimedAt?: string; unconfirmed?: boolean }) | null,
  open: OpenTransactionNow,
  note?: string,
): FaultRecord {
  const { attempt, lab } = parts;
  // Without a hit, the relay may still name the producer whose transaction was open (driver contract).
  const named = open !== null && typeof open === 'object' ? open : null;
  const txnOpen = named ? true : (open as boolean | null);
  const producer = event?.transactionalId ?? (named?.producer || undefined);
  // Only a program whose calls are seen can be held at a point: an opaque program's faults are not aimed.
  const aimedAt = attempt.driver.aims(fault.kind) && fault.points?.length ? [...fault.points] : null;
  const landed = aimedAt ? (event?.point && aimedAt.includes(event.point) ? 'at-point' : 'fallback') : undefined;
  // A crash point aimed at one stage: say which, so the learner can place the evidence.
  const aimed = event?.aimedAt
    ? `in the transaction writing ${lab.topics.find((t) => t.name === event.aimedAt)?.env ?? event.aimedAt}`
    : fault.path && landed === 'at-point'
      ? `on a call to ${fault.path}`
      : undefined;
  if (aimed) note = note ? `${aimed}; ${note}` : aimed;
  parts.liveness.faultEnded(fault.kind);
  if (event?.unconfirmed) {
    const unconfirmed = 'the program reported an open transaction, but the broker showed none (LSO = high watermark): not counted as inside one';
    note = note ? `${note}; ${unconfirmed}` : unconfirmed;
  }
  const record: FaultRecord = {
    atMs: attempt.elapsed(),
    kind: fault.kind,
    instance,
    ...(event?.point ? { crashPoint: event.point } : {}),
    // A crash point in an HTTP or SQL call lies inside the program's unit of work (nemesis/api-faults.ts).
    inTransaction: event ? event.txnOpen || insideUnitOfWork(event.point) : txnOpen,
    ...(aimedAt ? { aimedAt, landed } : {}),
    ...(fault.attempt && fault.attempt > 1 ? { try: fault.attempt } : {}),
    ...(fault.unannounced ? { unannounced: true as const } : {}),
    ...(producer ? { producer } : {}),
    ...(note ? { note } : {}),
  };
  attempt.history.fault(record);
  // A planned fault is k of the plan's N, whatever its tries; one the learner fired is not in the plan.
  const position = fault.ordinal ? `fault ${fault.ordinal}/${parts.gradePlan?.faults.faults.length ?? fault.ordinal}` : 'your fault';
  const landing = landed === 'fallback' ? ` (fell back; aimed at ${aimedAt!.join(' or ')})` : landed === 'at-point' ? ' (hit its point)' : '';
  attempt.history.mark('fault', instance, `${fault.kind}${record.crashPoint ? ` at ${record.crashPoint}` : ''}${landing}${record.try ? `, try ${record.try}` : ''}`);
  attempt.options.listener.fault(record);
  attempt.sink.system(
    `${position}: ${fault.kind} ${instance}${record.crashPoint ? ` at ${record.crashPoint}` : ''}${record.inTransaction ? ' (inside an open transaction)' : ''}` +
      (landed === 'fallback' ? ` — fell back: aimed at ${aimedAt!.join(' or ')}, which the program did not reach in time` : '') +
      (record.try ? ` (try ${record.try})` : '') +
      `${note ? ` — ${note}` : ''}`,
  );
  return record;
}
