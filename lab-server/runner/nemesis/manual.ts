/**
 * The workbench's manual faults (Run mode: kill, pause, resume, add-instance, broker-restart), for
 * every lab kind. They act on the same supervisor as the planned faults, and a manual broker
 * restart is the planned one's restartCluster.
 */
import type { FaultKind } from '../../../src/shared/report.ts';
import type { BrokerControl } from '../../broker/cluster.ts';
import type { MaintenanceLock } from '../../broker/maintenance.ts';
import { KafkaIqError } from '../../../src/shared/errors.ts';
import type { ManualFault } from '../contract.ts';
import type { Slot, Supervisor } from '../program/supervisor.ts';
import { restartCluster } from './broker-faults.ts';

/** At most this many instances of a program run at once in the workbench. */
export const MAX_INSTANCES = 6;

export interface ManualFaultHost {
  readonly supervisor: Supervisor;
  readonly control: BrokerControl | null;
  readonly maintenance: MaintenanceLock;
  /** The slot a fault on instanceId targets; throws INVALID_INPUT (in the lab kind's words) when there is none to act on. */
  target(kind: ManualFault, instanceId?: string): Slot | undefined;
  /** Records the fault in the history (and tells the learner). */
  record(kind: FaultKind, instance: string, note: string, slot: Slot | undefined): void;
  startSlot(n: number): Slot;
  system(line: string): void;
  emitState(): void;
  /** The lab kind's words: what a kill and a pause are, and why an instance cannot be added (null: it can). */
  readonly words: { kill: string; pause: { kind: FaultKind; note: string }; noAddInstance: string | null };
}

export async function manualFault(host: ManualFaultHost, kind: ManualFault, instanceId?: string): Promise<void> {
  const slot = host.target(kind, instanceId);
  switch (kind) {
    case 'kill':
      host.record('kill', slot!.current.id, host.words.kill, slot);
      host.supervisor.expectExit(slot!.current);
      await slot!.current.kill();
      host.startSlot(slot!.slot);
      return;
    case 'pause':
      host.record(host.words.pause.kind, slot!.current.id, host.words.pause.note, slot);
      slot!.current.pause();
      host.emitState();
      return;
    case 'resume':
      slot!.current.resume();
      host.system(`${slot!.current.id} resumed (SIGCONT)`);
      host.emitState();
      return;
    case 'add-instance': {
      if (host.words.noAddInstance) throw new KafkaIqError('INVALID_INPUT', host.words.noAddInstance);
      const next = host.supervisor.nextSlot;
      if (next > MAX_INSTANCES) throw new KafkaIqError('LIMIT_EXCEEDED', `At most ${MAX_INSTANCES} instances run at once.`);
      host.record('join', `i${next}`, 'added by you: the group rebalances', slot);
      host.startSlot(next);
      return;
    }
    case 'broker-restart':
      if (!host.control) throw new KafkaIqError('INVALID_INPUT', 'This server uses an external cluster (KAFKA_BROKERS): it cannot restart the broker.');
      host.record('broker-restart', 'broker', 'restarted by you', slot);
      await restartCluster(host.maintenance, host.control);
      host.system('broker is back');
      return;
  }
}
