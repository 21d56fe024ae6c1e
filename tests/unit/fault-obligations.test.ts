import { describe, expect, it } from 'vitest';
import type { CrashPoint, FaultRecord } from '../../src/shared/report.ts';
import type { PlannedFault } from '../../lab-server/runner/fault-plan.ts';
import { FaultObligations, MAX_DISTURBED_TRIES, MAX_FAULT_TRIES } from '../../lab-server/runner/pipeline/fault-obligations.ts';
import type { AimedHit, DriverContext, ProgramDriver } from '../../lab-server/runner/driver/contract.ts';
import { LATE_WAKE_REARMS } from '../../lab-server/runner/nemesis/process-faults.ts';
import { FaultPastTimeLimit, untilDeadline } from '../../lab-server/runner/driver/until-deadline.ts';
import type { ProgramProcess } from '../../lab-server/runner/program/program-instance.ts';
import type { Slot } from '../../lab-server/runner/program/supervisor.ts';

const kill = (attempt = 1): PlannedFault => ({ kind: 'kill', instance: 1, crashPoint: 'after:commit', points: ['after:commit'], occurrence: 1, delayMs: 0, attempt });
const record = (landed: 'at-point' | 'fallback', crashPoint?: CrashPoint): FaultRecord => ({
  atMs: 0,
  kind: 'kill',
  instance: 'i1',
  inTransaction: null,
  aimedAt: ['after:commit'],
  landed,
  ...(crashPoint ? { crashPoint } : {}),
});

describe('faults are obligations', () => {
  it('re-arms a fallback at once when the program reaches the point, and is inconclusive if it never lands', () => {
    const reached = new Set<CrashPoint>(['after:commit']);
    const o = new FaultObligations(reached, () => {});
    const queue: PlannedFault[] = [{ ...kill(), kind: 'stop' }];
    o.settle(kill(), [record('fallback')], queue, true);
    expect(queue[0]).toMatchObject({ kind: 'kill', attempt: 2 });
    for (let t = 2; t <= MAX_FAULT_TRIES; t++) o.settle(queue.shift()!, [record('fallback', 'after:send')], queue, true);
    expect(queue).toEqual([{ ...kill(), kind: 'stop' }]);
    expect(o.missed()).toHaveLength(1);
    expect(o.inconclusiveMessage()).toMatch(/kill at after:commit \(i1, after 3 tries\)/);
  });

  it('arms an owed fault again at a point of its list the program reaches, when the seed picked one it never does', () => {
    const zombie: PlannedFault = { kind: 'zombie', instance: 1, crashPoint: 'after:sendOffsets', points: ['after:send', 'after:sendOffsets'], occurrence: 1, delayMs: 0 };
    const fellBack: FaultRecord = { ...record('fallback'), kind: 'zombie', aimedAt: ['after:send', 'after:sendOffsets'] };
    const o = new FaultObligations(new Set<CrashPoint>(['after:send', 'after:commit']), () => {});
    const queue: PlannedFault[] = [];
    o.settle(zombie, [fellBack], queue, true);
    expect(queue).toMatchObject([{ crashPoint: 'after:send', attempt: 2 }]);
    o.settle(queue.shift()!, [fellBack], queue, true, true);
    expect(queue).toMatchObject([{ crashPoint: 'after:send', attempt: 2, disturbed: 1 }]);
    // Its pick reached: kept.
    const kept = new FaultObligations(new Set<CrashPoint>(['after:send', 'after:sendOffsets']), () => {});
    const again: PlannedFault[] = [];
    kept.settle(zombie, [fellBack], again, true);
    expect(again).toMatchObject([{ crashPoint: 'after:sendOffsets', attempt: 2 }]);
  });

  it('does not count a fallback the program had no chance at (it crashed, or the broker was down), a bounded number of times', () => {
    const o = new FaultObligations(new Set<CrashPoint>(['after:commit']), () => {});
    const queue: PlannedFault[] = [];
    o.settle(kill(), [record('fallback')], queue, true, true);
    expect(queue).toMatchObject([{ attempt: 1, disturbed: 1 }]);
    for (let d = 2; d <= MAX_DISTURBED_TRIES; d++) o.settle(queue.shift()!, [record('fallback')], queue, true, true);
    expect(queue).toMatchObject([{ attempt: 1, disturbed: MAX_DISTURBED_TRIES }]);
    // Past the bound a disturbed fallback counts like any other: the plan still ends.
    o.settle(queue.shift()!, [record('fallback')], queue, true, true);
    expect(queue).toMatchObject([{ attempt: 2, disturbed: MAX_DISTURBED_TRIES }]);
    for (let t = 2; t <= MAX_FAULT_TRIES; t++) o.settle(queue.shift()!, [record('fallback')], queue, true, true);
    expect(queue).toEqual([]);
    expect(o.inconclusiveMessage()).toMatch(/after 3 tries/);
  });

  it('owes a fault again that hit its point without its effect (a zombie that crashed on waking), a bounded number of times', () => {
    const lines: string[] = [];
    const o = new FaultObligations(new Set<CrashPoint>(['after:commit']), (l) => void lines.push(l));
    const queue: PlannedFault[] = [];
    o.settle(kill(), [record('at-point', 'after:commit')], queue, true, false, { withoutEffect: 'the zombie exited on waking' });
    expect(queue).toMatchObject([{ attempt: 1, disturbed: 1 }]);
    expect(o.landed).toBe(0);
    expect(lines[0]).toMatch(/hit its point, but the zombie exited on waking: arming it again/);
    for (let d = 2; d <= MAX_DISTURBED_TRIES; d++) o.settle(queue.shift()!, [record('at-point', 'after:commit')], queue, true, false, { withoutEffect: 'again' });
    // Past the bound the landing stands: never inconclusive for it.
    o.settle(queue.shift()!, [record('at-point', 'after:commit')], queue, true, false, { withoutEffect: 'again' });
    expect(queue).toEqual([]);
    expect(o.landed).toBe(1);
    expect(o.inconclusiveMessage()).toBeNull();
  });

  it('arms a zombie that woke after its transaction timeout again only once, so the faults after it keep their input', () => {
    const lines: string[] = [];
    const o = new FaultObligations(new Set<CrashPoint>(['after:commit']), (l) => void lines.push(l));
    const queue: PlannedFault[] = [kill()];
    const late = { withoutEffect: 'the zombie woke 2.4 s after its transaction timeout', rearmsAtMost: LATE_WAKE_REARMS };
    o.settle(kill(), [record('at-point', 'after:commit')], queue, true, false, late);
    expect(queue).toMatchObject([{ disturbed: 1 }, { attempt: 1 }]);
    expect(o.landed).toBe(0);
    o.settle(queue.shift()!, [record('at-point', 'after:commit')], queue, true, false, late);
    // The second late wake: the landing stands, and the next fault in the plan is the next to go.
    expect(queue).toEqual([kill()]);
    expect(o.landed).toBe(1);
    expect(lines[1]).toMatch(/woke 2\.4 s after its transaction timeout; not armed again \(it was tried as often as that cause allows\): its landing stands/);
    expect(o.inconclusiveMessage()).toBeNull();
  });

  it('is satisfied once the owed fault lands on its point', () => {
    const o = new FaultObligations(new Set(['after:commit']), () => {});
    const queue: PlannedFault[] = [];
    o.settle(kill(), [record('fallback')], queue, true);
    o.settle(queue.shift()!, [record('at-point', 'after:commit')], queue, true);
    expect(queue).toEqual([]);
    expect(o.inconclusiveMessage()).toBeNull();
    expect(o.landed).toBe(1);
  });

  it('lets the fallback stand for a call the program never makes (a correct design the lab did not write)', () => {
    const o = new FaultObligations(new Set(['after:send']), () => {});
    const queue: PlannedFault[] = [];
    o.settle(kill(), [record('fallback', 'after:send')], queue, true);
    expect(queue).toMatchObject([{ attempt: 2 }]); // tried again after the rest of the plan
    o.settle(queue.shift()!, [record('fallback', 'after:send')], queue, true);
    expect(queue).toEqual([]);
    expect(o.missed()).toEqual([]);
    expect(o.designNote()).toMatch(/never makes that call/);
  });

  it('counts aimed faults the time limit cut off as missed', () => {
    const o = new FaultObligations(new Set(['after:commit']), () => {});
    o.planEnded(kill(2), [], 'time');
    expect(o.inconclusiveMessage()).toMatch(/before the time limit/);
  });

  it('counts aimed faults a program that stopped restarting never met as missed, and says why', () => {
    const o = new FaultObligations(new Set(['after:commit']), () => {});
    o.planEnded(kill(1), [kill(2)], 'gone');
    expect(o.missed()).toHaveLength(2);
    expect(o.inconclusiveMessage()).toMatch(/before the program stopped restarting/);
  });

  it('ignores faults a driver could not aim (no aimedAt: a --cmd program)', () => {
    const o = new FaultObligations(new Set(), () => {});
    const queue: PlannedFault[] = [];
    o.settle(kill(), [{ atMs: 0, kind: 'kill', instance: 'i1', inTransaction: null }], queue, true);
    expect(queue).toEqual([]);
    expect(o.inconclusiveMessage()).toBeNull();
  });
});

describe('no fault fires past the time limit', () => {
  // A stand-in driver whose armAndWrite answers at once: what is tested is the guard around it.
  const driverAnswering = (event: AimedHit | null) =>
    ({ kind: 'instrumented', limitFactor: 1, armAndWrite: async () => ({ instance: {} as ProgramProcess, event }), quietMs: (base: number) => base }) as unknown as ProgramDriver;
  const ctx = {} as DriverContext;
  const slot = {} as Slot;

  it('throws FaultPastTimeLimit for a fault whose point was not reached before the limit', async () => {
    // A limit a second gone, read the same each time: `Date.now() - 1` read after the guard's own
    // Date.now() could equal it when the millisecond ticks in between, and the fault would pass.
    const limit = Date.now() - 1_000;
    const guarded = untilDeadline(driverAnswering(null), () => limit);
    await expect(guarded.armAndWrite(ctx, slot, kill(), 'kill', [])).rejects.toBeInstanceOf(FaultPastTimeLimit);
    // Everything else is the driver's own.
    expect(guarded.kind).toBe('instrumented');
    expect(guarded.quietMs(7, false)).toBe(7);
  });

  it('lets a fault go through when its point was hit, or the limit is still ahead', async () => {
    const hit = { t: 'hit', point: 'after:commit', action: 'kill', txnOpen: false } as unknown as AimedHit;
    const past = Date.now() - 1_000;
    await expect(untilDeadline(driverAnswering(hit), () => past).armAndWrite(ctx, slot, kill(), 'kill', [])).resolves.toMatchObject({ event: hit });
    await expect(untilDeadline(driverAnswering(null), () => Date.now() + 60_000).armAndWrite(ctx, slot, kill(), 'kill', [])).resolves.toMatchObject({ event: null });
  });
});
