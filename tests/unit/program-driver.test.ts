/**
 * The two program drivers (runner/driver): what differs between an instrumented program (our
 * wrapper reports over IPC) and an opaque `--cmd` program (the broker's evidence stands in),
 * with fake processes and a fake attempt: no Kafka, no program.
 */
import { describe, expect, it, vi } from 'vitest';
import type { FaultRecord } from '../../src/shared/report.ts';
import type { DriverContext } from '../../lab-server/runner/driver/contract.ts';
import { driverFor } from '../../lab-server/runner/driver/index.ts';
import type { PlannedFault } from '../../lab-server/runner/fault-plan.ts';
import type { Slot } from '../../lab-server/runner/program/supervisor.ts';
import { pipelineLabSchema } from '../../src/shared/lab.ts';
import { FakeProcess } from '../support/fake-program.ts';

const lab = pipelineLabSchema.parse({
  title: 'drivers',
  summary: 'drivers under test',
  env: [{ name: 'INPUT_TOPIC', description: 'in' }],
  topics: [
    { name: 'input', env: 'INPUT_TOPIC', partitions: 1, role: 'input', description: 'in' },
    { name: 'output', env: 'OUTPUT_TOPIC', partitions: 1, role: 'output', description: 'out' },
  ],
  faults: { full: [{ kind: 'kill' }], quick: [{ kind: 'kill' }] },
  checks: ['no-loss'],
});

const instrumented = driverFor({ kind: 'bundle', file: 'x.mjs', readDirs: [], writeDir: '/tmp' }, false);
const opaque = driverFor({ kind: 'command', command: 'true', cwd: '/tmp', writeDir: '/tmp' }, false);
const watchedCommand = driverFor({ kind: 'command', command: 'true', cwd: '/tmp', writeDir: '/tmp' }, true);
const fault: PlannedFault = { kind: 'kill', instance: 1, crashPoint: 'after:send', occurrence: 1, delayMs: 0 };
const faults = (inTransaction: boolean | null): FaultRecord[] => [{ atMs: 0, kind: 'kill', instance: 'i1', inTransaction }];

function context(brokerOpen: boolean | null) {
  const waves: number[] = [];
  const ctx: DriverContext = {
    lab,
    api: null,
    program: { slots: [] },
    input: {
      committedWritten: 0,
      processed: 0,
      freshProcessed: async () => 0,
      writeWave: async (w) => void waves.push(w.length),
      nextWave: () => [],
    },
    cluster: { realTopic: (t) => `ns-${t}`, brokerSaysTransactionOpen: async () => brokerOpen },
  };
  return { ctx, waves };
}

describe('program drivers', () => {
  it('an opaque program gets twice the time limit and longer to show progress', () => {
    expect(instrumented.limitFactor).toBe(1);
    expect(opaque.limitFactor).toBe(2);
    expect(instrumented.quietMs(6_000, false)).toBe(6_000);
    expect(instrumented.quietMs(6_000, true)).toBe(12_000);
    expect(opaque.quietMs(6_000, false)).toBe(18_000);
  });

  it('a fault hit a transaction: the wrapper says so, or for an opaque program aborted records in the output do', () => {
    expect(instrumented.hitTransaction(faults(true), 0)).toBe(true);
    expect(instrumented.hitTransaction(faults(null), 5)).toBe(false);
    expect(opaque.hitTransaction(faults(null), 5)).toBe(true);
    expect(opaque.hitTransaction(faults(false), 0)).toBe(false);
  });

  it("a fault that hit no point takes its open transaction from the relay, with the producer, when the instance is wire-watched", async () => {
    const watched = Object.assign(new FakeProcess('i1', 1), { wireWatched: true, openTransactionOnWire: () => ({ transactionalId: 'tx-i1' }) });
    const slot = { slot: 1, current: watched, incarnation: 1, txnOpen: false, callInFlight: null, restartsInARow: 0 } as Slot;
    expect(await instrumented.openTransactionNow(context(null).ctx, slot)).toEqual({ producer: 'tx-i1' });
    // A transaction without records (opened for show, or offsets only) is none; the last event's flag is not asked.
    const none = Object.assign(new FakeProcess('i1', 1), { wireWatched: true, openTransactionOnWire: () => null });
    expect(await instrumented.openTransactionNow(context(null).ctx, { ...slot, current: none, txnOpen: true })).toBe(false);
    // Not wire-watched: the wrapper's word, as before.
    expect(await instrumented.openTransactionNow(context(null).ctx, { ...slot, current: new FakeProcess('i1', 1), txnOpen: true })).toBe(true);
  });

  it('the instrumented driver arms the crash point over IPC and resolves with the hit', async () => {
    const { ctx, waves } = context(true); // the broker confirms the open transaction
    const process = new FakeProcess('i1', 1);
    const slot: Slot = { slot: 1, current: process, incarnation: 1, txnOpen: false, callInFlight: null, restartsInARow: 0 };
    const armed = instrumented.armAndWrite(ctx, slot, fault, 'kill', [{ records: [], commit: true }]);
    await new Promise((r) => setImmediate(r));
    expect(process.sent[0]).toEqual({ t: 'arm', point: 'after:send', action: 'kill', occurrence: 1 });
    process.report({ t: 'hit', point: 'after:send', action: 'kill', txnOpen: true });
    const { event } = await armed;
    expect(event).toMatchObject({ t: 'hit', point: 'after:send', txnOpen: true });
    expect(waves).toEqual([1]);
    slot.txnOpen = true;
    expect(await instrumented.openTransactionNow(ctx, slot)).toBe(true);
  });

  it("a hit's open transaction the broker does not show is not believed (a forged answer)", async () => {
    for (const brokerSays of [false, null]) {
      const { ctx } = context(brokerSays);
      const process = new FakeProcess('i1', 1);
      const slot: Slot = { slot: 1, current: process, incarnation: 1, txnOpen: false, callInFlight: null, restartsInARow: 0 };
      const armed = instrumented.armAndWrite(ctx, slot, fault, 'kill', [{ records: [], commit: true }]);
      await new Promise((r) => setImmediate(r));
      process.report({ t: 'hit', point: 'after:send', action: 'kill', txnOpen: true });
      expect((await armed).event).toMatchObject({ point: 'after:send', txnOpen: false, unconfirmed: true });
    }
  });

  it('the opaque driver arms nothing: it writes the wave and asks the broker whether a transaction is open', async () => {
    const { ctx, waves } = context(true);
    const process = new FakeProcess('i1', 1);
    const slot: Slot = { slot: 1, current: process, incarnation: 1, txnOpen: false, callInFlight: null, restartsInARow: 0 };
    const { event } = await opaque.armAndWrite(ctx, slot, fault, 'kill', [{ records: [], commit: true }]);
    expect(event).toBeNull();
    expect(process.sent).toEqual([]);
    expect(waves).toEqual([1]);
    expect(await opaque.openTransactionNow(ctx, slot)).toBe(true);
    expect(await opaque.anyTransactionOpen(ctx)).toBe(true);
  });

  it('a command in the sandbox is aimed at like our bundle (a send error too: the relay refuses its Produce), and a booting one is waited for until it speaks', async () => {
    expect(watchedCommand.kind).toBe('instrumented');
    expect([watchedCommand.aims('kill'), watchedCommand.aims('zombie'), watchedCommand.aims('send-error')]).toEqual([true, true, true]);
    expect([instrumented.aims('send-error'), opaque.aims('kill')]).toEqual([true, false]);
    expect(watchedCommand.limitFactor).toBe(2);
    vi.useFakeTimers();
    try {
      const { ctx } = context(true);
      const process = new FakeProcess('i1', 1);
      const slot: Slot = { slot: 1, current: process, incarnation: 1, txnOpen: false, callInFlight: null, restartsInARow: 0 };
      let settled = false;
      const armed = watchedCommand.armAndWrite(ctx, slot, fault, 'kill', [{ records: [], commit: true }]).finally(() => (settled = true));
      await vi.advanceTimersByTimeAsync(30_000); // a JVM still booting: silent, and not given up on
      expect(settled).toBe(false);
      expect(process.sent[0]).toMatchObject({ t: 'arm', point: 'after:send', action: 'kill' });
      process.report({ t: 'member', groupId: 'g', memberId: 'm' }); // its first message: the hit timeout starts
      await vi.advanceTimersByTimeAsync(4_000);
      expect(settled).toBe(false);
      process.report({ t: 'hit', point: 'after:send', action: 'kill', txnOpen: true });
      expect((await armed).event).toMatchObject({ point: 'after:send', txnOpen: true });
      // A send error is armed like any point (in the relay, for a command in the sandbox) and held to its hit.
      const other = new FakeProcess('i1', 2);
      other.report({ t: 'member', groupId: 'g', memberId: 'm' });
      const errorSlot: Slot = { ...slot, current: other };
      const sendError = watchedCommand.armAndWrite(ctx, errorSlot, { ...fault, kind: 'send-error', crashPoint: 'before:send' }, 'error', [{ records: [], commit: true }]);
      await vi.advanceTimersByTimeAsync(100);
      expect(other.sent[0]).toMatchObject({ t: 'arm', point: 'before:send', action: 'error' });
      other.report({ t: 'hit', point: 'before:send', action: 'error', txnOpen: true });
      expect((await sendError).event).toMatchObject({ point: 'before:send', txnOpen: true });
    } finally {
      vi.useRealTimers();
    }
  });
});
