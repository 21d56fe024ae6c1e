import type { FaultSpec } from '../../src/shared/lab.ts';
import type { CrashPoint, FaultKind } from '../../src/shared/report.ts';

/** A small, well-known seeded PRNG (mulberry32): the same seed gives the same plan everywhere. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface PlannedFault {
  kind: FaultKind;
  /** Instance slot it targets (1-based). */
  instance: number;
  /** Exact point, or undefined for a seeded moment while the program works. */
  crashPoint?: CrashPoint;
  /**
   * Every point the lab aims this fault at (crashPoint is the seed's pick among them). A fault
   * that falls back (the program did not reach its point in time) stays owed until it lands on
   * one of these: see the pipeline scenario's obligations.
   */
  points?: readonly CrashPoint[];
  /** Its place in the plan (1-based): fault k of N in the learner's terminal, whatever its tries. */
  ordinal?: number;
  /** 1 for the planned injection; 2, 3, ... when an owed fault is armed again. */
  attempt?: number;
  /** Injections of this fault that fell back while the program was restarting or the broker down: not counted as tries. */
  disturbed?: number;
  /** Fire at the n-th time the program reaches the point after arming. */
  occurrence: number;
  /** Logical topic: only calls for writes to it count (aims the crash point at one stage). */
  topic?: string;
  /** A path of the lab API: only HTTP calls to it count (FaultSpec.path). */
  path?: string;
  /** For faults without a crash point: delay after the wave is written. */
  delayMs: number;
  /**
   * In no lab's fault list and aimed at no point: a kill at a seeded moment after a wave is
   * written, armed nowhere (see planFaults), so neither the plan a lab shows nor the crash points
   * tell a program when it is safe.
   */
  unannounced?: true;
}

/** A fault armed again after it fell back or hit without effect: not its first injection. */
export const owedAgain = (fault: PlannedFault): boolean => (fault.attempt ?? 1) > 1 || (fault.disturbed ?? 0) > 0;

export interface PlanOptions {
  /** A lab written for one instance: joins go last (see planFaults). */
  joinsLast?: boolean;
  /** The lab's instances: the plan gets its unannounced kill, of one of them. */
  instances?: number;
}

/** The unannounced kill fires this long at most after its wave is written: while the program works on it, or just after. */
export const UNANNOUNCED_WINDOW_MS = 1_000;
/** Mixed into the seed for the unannounced kill's draws, so the listed faults' plan of a seed is the same with it or without. */
const UNANNOUNCED_STREAM = 0x5eed_f417;

export interface FaultPlan {
  seed: number;
  faults: PlannedFault[];
}

/**
 * Every fault of the lab's list fires once; the seed decides their order, which of the allowed
 * crash points each one uses and on which occurrence, and (with `instances`) the unannounced kill. Broker restarts never come first, so the
 * program has made progress before the slowest fault; coordinator kills always come last.
 */
export function planFaults(specs: FaultSpec[], seed: number, options: PlanOptions = {}): FaultPlan {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const faults: PlannedFault[] = specs.map((spec) => ({
    kind: spec.kind,
    instance: spec.instance,
    crashPoint: spec.at.length ? pick(spec.at) : undefined,
    points: spec.at,
    occurrence: spec.occurrence,
    ...(spec.topic ? { topic: spec.topic } : {}),
    ...(spec.path ? { path: spec.path } : {}),
    delayMs: 100 + Math.floor(random() * 400),
  }));
  for (let i = faults.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [faults[i], faults[j]] = [faults[j]!, faults[i]!];
  }
  // Coordinator kills come last (in their seeded order). A program that cannot recover from one
  // is left stuck, alive and idle, and a later kill of the program would restart it and hide that.
  // Joins too, in a lab written for one instance (options.joinsLast): after a join the input is
  // shared by two instances, and a later fault aimed at i1 may find it owning none of its wave's
  // partitions. The rest of the input then arrives while the group rebalances, which is the point.
  const goesLast = (f: PlannedFault) => f.kind === 'coordinator-kill' || (!!options.joinsLast && f.kind === 'join');
  const last = faults.filter(goesLast);
  const rest = faults.filter((f) => !goesLast(f));
  const brokerFirst = rest[0]?.kind === 'broker-restart' && rest.length > 1;
  if (brokerFirst) rest.push(rest.shift()!);
  // Besides the listed faults, one the program cannot see coming: a kill of a seeded instance at a
  // seeded moment after a seeded wave, in no lab's list and held at no crash point. Aimed faults
  // already land wherever the program does its work; this one means nothing about timing either
  // (when input arrives, how long since the last fault) tells a program it is safe from a crash.
  // Before the faults that go last, for the reason they do.
  if (options.instances) {
    const draw = seededRandom((seed ^ UNANNOUNCED_STREAM) >>> 0);
    const kill: PlannedFault = {
      kind: 'kill',
      instance: 1 + Math.floor(draw() * options.instances),
      points: [],
      occurrence: 1,
      delayMs: Math.floor(draw() * UNANNOUNCED_WINDOW_MS),
      unannounced: true,
    };
    rest.splice(Math.floor(draw() * (rest.length + 1)), 0, kill);
  }
  return { seed, faults: [...rest, ...last].map((f, i) => ({ ...f, ordinal: i + 1 })) };
}

export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
