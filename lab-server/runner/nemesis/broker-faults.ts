/** Faults of the cluster: broker-restart (every broker, cleanly) and coordinator-kill (SIGKILL of one node). */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BrokerControl } from '../../broker/cluster.ts';
import type { MaintenanceLock } from '../../broker/maintenance.ts';
import { TRANSACTION_STATE_TOPIC } from '../../kafka/transaction-log.ts';
import type { FaultHandler } from './context.ts';

/**
 * How long the grader waits before starting a killed coordinator's broker again. The node is down
 * for longer than that (a broker JVM takes several seconds to start), and the controller moves its
 * leaderships after broker.session.timeout.ms (3 s) or when the restarted node registers again.
 */
export const COORDINATOR_DOWN_MS = 2_000;

/**
 * Every broker stops cleanly and starts again, holding the cluster's maintenance lock exclusively
 * (no other attempt seeds or verifies meanwhile). A node killed by a fault must be back first.
 * The planned fault and the workbench's manual restart both come here.
 */
export async function restartCluster(maintenance: MaintenanceLock, control: BrokerControl): Promise<void> {
  await maintenance.withExclusive(async () => {
    await maintenance.whenWhole();
    await control.restart();
  });
}

export const brokerRestartFault: FaultHandler = async (ctx, fault, wave) => {
  const slot = ctx.program.slot(fault.instance) ?? ctx.program.slot(1)!;
  await ctx.input.writeWave(wave);
  await ctx.program.driver.waitForEvent(slot.current, (e) => e.t === 'call' && e.point === 'after:send', 4_000);
  if (!ctx.cluster.control) {
    ctx.record.fault(fault, 'broker', null, null, 'skipped: this cluster is not one KafkaIQ started (KAFKA_BROKERS), so it is not restarted');
    return;
  }
  const open = await ctx.program.driver.anyTransactionOpen(ctx);
  ctx.record.fault(fault, 'broker', null, open, 'every broker stops cleanly and starts again');
  const restartStarted = Date.now();
  await restartCluster(ctx.cluster.maintenance, ctx.cluster.control);
  ctx.log.system(`broker is back after ${((Date.now() - restartStarted) / 1000).toFixed(1)} s`);
};

/**
 * SIGKILL the broker that coordinates the instance's transactions while the program is held at
 * its crash point (a transaction open), let the program go on against the failover (the
 * coordinator moves to another replica of __transaction_state once the controller fences the
 * dead node), then start the node again. The whole window holds the cluster's maintenance lock
 * exclusively: other attempts on this cluster do not create topics or verify with a node down.
 */
export const coordinatorKillFault: FaultHandler = async (ctx, fault, wave) => {
  const slot = ctx.program.slot(fault.instance) ?? ctx.program.slot(1)!;
  // A node killed by an earlier fault must be back first; wait before arming, so the program is
  // not held at its crash point (its transaction open) for the length of a broker start.
  await ctx.cluster.maintenance.whenWhole();
  const { instance, event } = await ctx.program.driver.armAndWrite(ctx, slot, fault, 'pause', wave);
  const control = ctx.cluster.control;
  const open = event ? null : await ctx.program.driver.openTransactionNow(ctx, slot);
  if (!control) {
    instance.resume();
    ctx.record.fault(fault, 'broker', event, open, 'skipped: the cluster is external (KAFKA_BROKERS), so no broker is killed');
    return;
  }
  const transactionalId = ctx.program.env(slot.slot).TRANSACTIONAL_ID!;
  await ctx.cluster.maintenance.withExclusive(async () => {
    let coordinator;
    try {
      // Another attempt on this cluster may have killed a node meanwhile.
      await ctx.cluster.maintenance.whenWhole();
      coordinator = await ctx.cluster.findTransactionCoordinator(transactionalId);
    } catch (err) {
      instance.resume();
      throw err;
    }
    const nodes = await control.nodeIds();
    if (nodes.length < 3) {
      instance.resume();
      ctx.record.fault(fault, 'broker', event, open, `skipped: the cluster has ${nodes.length} broker(s), and killing the coordinator needs 3`);
      return;
    }
    const where = coordinator.partition >= 0 ? ` (leader of ${TRANSACTION_STATE_TOPIC}-${coordinator.partition})` : '';
    ctx.record.fault(
      fault,
      `broker-${coordinator.nodeId}`,
      event,
      open,
      `SIGKILL of broker ${coordinator.nodeId}, the transaction coordinator of ${instance.id}${where}; it starts again ${COORDINATOR_DOWN_MS / 1000} s later`,
    );
    await control.killNode(coordinator.nodeId);
    // The program goes on at once: its next transactional call meets the dead coordinator.
    instance.resume();
    await sleep(COORDINATOR_DOWN_MS);
    // The node comes back in the background while the program works on with two brokers; the
    // next fault that needs all three (and topic creation, and verification) waits for it.
    const started = Date.now();
    const nodeId = coordinator.nodeId;
    ctx.cluster.maintenance.recover(
      (async () => {
        await control.startNode(nodeId);
        // Back in every ISR: the next node loss must still leave 2 in-sync replicas everywhere.
        const inSync = await ctx.cluster.waitForFullIsr(30_000);
        if (!ctx.program.stopping) ctx.log.system(`broker ${nodeId} is back${inSync ? ' and in sync' : ' (some replicas still catching up)'} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      })(),
    );
  });
};
