/**
 * The nemesis tests' fake attempt (tests/unit/nemesis.test.ts): a pipeline lab, slots of fake
 * processes, a fake cluster of three nodes, and the log of what the fault handlers did.
 */
import { pipelineLabSchema, type PipelineLab } from '../../src/shared/lab.ts';
import type { FaultKind, FaultRecord } from '../../src/shared/report.ts';
import type { ApiNamespace } from '../../lab-server/api/lab-api.ts';
import { MaintenanceLock } from '../../lab-server/broker/maintenance.ts';
import type { PlannedFault } from '../../lab-server/runner/fault-plan.ts';
import type { NemesisContext } from '../../lab-server/runner/nemesis/context.ts';
import type { ProgramProcess } from '../../lab-server/runner/program/program-instance.ts';
import type { SeedTransaction } from '../../lab-server/runner/seeder.ts';
import type { Slot } from '../../lab-server/runner/program/supervisor.ts';
import { FakeDriver, FakeProcess } from './fake-program.ts';

export const baseLab = pipelineLabSchema.parse({
  title: 'nemesis',
  summary: 'fault handlers under test',
  env: [{ name: 'INPUT_TOPIC', description: 'in' }],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 1, role: 'input', description: 'in' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 1, role: 'output', description: 'out' },
  ],
  faults: { full: [{ kind: 'kill', at: ['after:send'] }], quick: [{ kind: 'kill', at: ['after:send'] }] },
  checks: ['no-loss'],
  // The shortest session the schema allows: the pause fault waits for it.
  kafkajs: { consumer: { sessionTimeout: 2_000 } },
});

export const wave = (n: number): SeedTransaction[] => [{ records: Array.from({ length: n }, (_, i) => ({ topic: 'input', partition: 0, key: `k${i}`, value: `v${i}`, index: i })), commit: true }];
export const fault = (kind: FaultKind, extra: Partial<PlannedFault> = {}): PlannedFault => ({ kind, instance: 1, crashPoint: 'after:send', occurrence: 1, delayMs: 0, ...extra });

export interface Recorded {
  kind: FaultKind;
  instance: string;
  crashPoint?: string;
  txnOpen: boolean | null;
  note?: string;
}

/** A fake attempt: slots of fake processes, a fake cluster with three nodes, and the log of what the handlers did. */
export function fakeAttempt(options: { lab?: PipelineLab; control?: boolean; nodes?: number; api?: ApiNamespace | null } = {}) {
  const slots = new Map<number, Slot>();
  const zombies = new Set<ProgramProcess>();
  const expected = new Set<ProgramProcess>();
  const members = new Set<ProgramProcess>();
  const recorded: Recorded[] = [];
  const waves: number[] = [];
  const lines: string[] = [];
  const left: string[] = [];
  const cluster = { restarts: 0, killed: [] as number[], started: [] as number[], exclusiveDuringRestart: false };
  const maintenance = new MaintenanceLock();
  let committed = 0;
  /** What the broker says about the open transactions' expiry (ctx.earliestTransactionExpiry). */
  const broker = { expiry: null as number | null, asked: 0 };
  const driver = new FakeDriver();
  const startSlot = (n: number): Slot => {
    const previous = slots.get(n);
    const slot: Slot = { slot: n, current: new FakeProcess(`i${n}`, (previous?.incarnation ?? 0) + 1), incarnation: (previous?.incarnation ?? 0) + 1, txnOpen: false, callInFlight: null, restartsInARow: 0 };
    slots.set(n, slot);
    return slot;
  };
  startSlot(1);
  const control = {
    nodeIds: async () => Array.from({ length: options.nodes ?? 3 }, (_, i) => i + 1),
    restart: async () => {
      cluster.restarts++;
      cluster.exclusiveDuringRestart = maintenance.isDown;
    },
    killNode: async (id: number) => void cluster.killed.push(id),
    startNode: async (id: number) => void cluster.started.push(id),
  };
  const ctx: NemesisContext = {
    lab: options.lab ?? baseLab,
    api: options.api ?? null,
    program: {
      driver,
      stopping: false,
      get slots() {
        return slots.values();
      },
      get nextSlot() {
        return Math.max(0, ...slots.keys()) + 1;
      },
      slot: (n) => slots.get(n),
      startSlot,
      expectExit: (i) => void expected.add(i),
      addZombie: (i) => void zombies.add(i),
      removeZombie: (i) => void zombies.delete(i),
      hasMemberships: (i) => members.has(i),
      removeFromGroups: async (i) => void left.push(i.id),
      awaitStableGroup: async () => {},
      env: (slot) => ({ TRANSACTIONAL_ID: `ns-tx-${slot}` }),
      letStallShow: async () => {},
    },
    input: {
      get processed() {
        return committed;
      },
      get committedWritten() {
        return committed;
      },
      freshProcessed: async () => committed,
      writeWave: async (w) => {
        if (!w.length) return;
        const n = w.reduce((sum, t) => sum + t.records.length, 0);
        waves.push(n);
        committed += n; // the fake program keeps up with every wave at once
      },
      nextWave: () => wave(2),
    },
    cluster: {
      brokers: ['127.0.0.1:1'],
      control: options.control === false ? null : control,
      maintenance,
      realTopic: (t) => `ns-${t}`,
      brokerSaysTransactionOpen: async () => null,
      findTransactionCoordinator: async () => ({ nodeId: 2, partition: 0, source: 'find-coordinator' }),
      waitForFullIsr: async () => true,
      earliestTransactionExpiry: async () => {
        broker.asked++;
        return broker.expiry;
      },
    },
    record: {
      fault: (f, instance, event, open, note) => {
        const txnOpen = open !== null && typeof open === 'object' ? true : open;
        recorded.push({ kind: f.kind, instance, ...(event ? { crashPoint: event.point } : {}), txnOpen: event ? event.txnOpen : txnOpen, ...(note ? { note } : {}) });
        return { atMs: 0, kind: f.kind, instance, inTransaction: event ? event.txnOpen : txnOpen } satisfies FaultRecord;
      },
    },
    log: { system: (line) => void lines.push(line), emitState: () => {} },
  };
  const first = slots.get(1)!.current as FakeProcess;
  return { ctx, driver, slots, zombies, expected, members, recorded, waves, lines, left, cluster, first, broker };
}

