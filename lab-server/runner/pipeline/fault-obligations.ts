/**
 * Faults are obligations. A fault the lab aims at crash points (kill at after:commit, say) is what
 * makes the lab hard; when it fires by fallback instead (the program did not reach the point in
 * time, e.g. because an earlier fault left it wedged), the plan still owes it. It is armed again on
 * the next incarnation, first in the queue, until it lands on one of its points, runs out of tries
 * or input, or the time limit ends the grade. A grade with an owed fault that never landed is
 * inconclusive, never a pass.
 *
 * One exception keeps correct designs the course did not write from being punished: a point the
 * program never reaches at all, in any incarnation (a database sink that keeps its positions in the
 * database never calls commitOffsets), is not part of its design. Such a fault is tried once more
 * after the rest of the plan, and if the point still never showed up, its fallback stands and the
 * report says so.
 */
import type { CrashPoint, FaultRecord } from '../../../src/shared/report.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { FaultOutcome } from '../nemesis/context.ts';

/** Injections per aimed fault, the planned one included. */
export const MAX_FAULT_TRIES = 3;
/**
 * Fallbacks that do not count as tries, per fault: the program crashed on its own or the broker
 * was down while the fault waited for its point (another grade's broker restart can make a correct
 * client give up and exit). The arm died with that incarnation; the program had no chance to reach
 * the point. Bounded, so a program that crashes every time still ends its plan.
 */
export const MAX_DISTURBED_TRIES = 3;

export interface UnlandedFault {
  kind: PlannedFault['kind'];
  instance: number;
  points: readonly CrashPoint[];
  tries: number;
  /** Why the grader stopped trying. */
  reason: 'tries' | 'input' | 'time' | 'gone';
}

const describe = (f: Pick<UnlandedFault, 'kind' | 'points'>) => `${f.kind} at ${f.points.join(' or ')}`;

export class FaultObligations {
  private readonly unlanded: UnlandedFault[] = [];
  /** Aimed faults that landed on one of their points, for the report's summary. */
  landed = 0;

  constructor(
    private readonly reached: ReadonlySet<CrashPoint>,
    private readonly system: (line: string) => void,
  ) {}

  /**
   * After an injection: `records` are the fault records it added. A fallback of a reachable point
   * goes back to the front of the queue; of a point never seen yet, to the end (once).
   */
  settle(fault: PlannedFault, records: readonly FaultRecord[], queue: PlannedFault[], inputLeft: boolean, disturbed = false, outcome?: FaultOutcome): void {
    const record = records.find((r) => r.aimedAt);
    if (!fault.points?.length || !record) return; // not aimed, or a driver that cannot aim (--cmd)
    const aimed = { kind: fault.kind, points: fault.points };
    const uncounted = fault.disturbed ?? 0;
    if (record.landed === 'at-point') {
      // It hit its point, but what it exists to show did not get its chance (a zombie that crashed
      // on waking): owed again like a disturbed fallback, within the bound its cause allows. Past
      // it the landing stands, so a program whose zombie always ends that way is not held inconclusive.
      if (outcome && uncounted < (outcome.rearmsAtMost ?? MAX_DISTURBED_TRIES) && inputLeft) {
        queue.unshift({ ...fault, crashPoint: this.rearmPoint(fault), disturbed: uncounted + 1 });
        this.system(`${describe(aimed)} hit its point, but ${outcome.withoutEffect}: arming it again (not counted as a try).`);
        return;
      }
      if (outcome) this.system(`${describe(aimed)} hit its point, but ${outcome.withoutEffect}; not armed again (${inputLeft ? 'it was tried as often as that cause allows' : 'no input is left'}): its landing stands.`);
      this.landed++;
      return;
    }
    const tries = fault.attempt ?? 1;
    const stop = (reason: UnlandedFault['reason']) => void this.unlanded.push({ ...aimed, instance: fault.instance, tries, reason });
    if (disturbed && uncounted < MAX_DISTURBED_TRIES && inputLeft && this.isReachable(fault.points)) {
      queue.unshift({ ...fault, crashPoint: this.rearmPoint(fault), disturbed: uncounted + 1 });
      this.system(`${describe(aimed)} fell back while the program was restarting or the broker was down: not counted as a try, arming it again.`);
      return;
    }
    if (tries >= MAX_FAULT_TRIES) return stop('tries');
    if (!inputLeft) return stop('input');
    const next = { ...fault, crashPoint: this.rearmPoint(fault), attempt: tries + 1 };
    if (this.isReachable(fault.points)) {
      queue.unshift(next);
      this.system(`${describe(aimed)} is still owed (the program has reached that point before): arming it again (try ${tries + 1} of ${MAX_FAULT_TRIES}).`);
    } else if (tries === 1) {
      queue.push(next);
      this.system(`${describe(aimed)} fell back: the program has not made that call yet; trying again after the rest of the plan.`);
    } else {
      stop('tries');
    }
  }

  /** The time limit, or a program that stopped restarting, ended the plan: every aimed fault still queued never landed. */
  planEnded(current: PlannedFault, queue: readonly PlannedFault[], reason: 'time' | 'gone'): void {
    for (const f of [current, ...queue]) {
      if (f.points?.length) this.unlanded.push({ kind: f.kind, instance: f.instance, points: f.points, tries: (f.attempt ?? 1) - 1, reason });
    }
  }

  /**
   * Owed faults that never landed although the program does reach their points: the grade cannot
   * vouch for what they test. Judged at the end, when every point the program ever reached is known.
   */
  missed(): UnlandedFault[] {
    return this.unlanded.filter((f) => this.isReachable(f.points));
  }

  /** Aimed faults whose points the program never reached at all: their fallback stands. */
  notInDesign(): UnlandedFault[] {
    return this.unlanded.filter((f) => !this.isReachable(f.points));
  }

  /** The inconclusive message, or null when every owed fault landed. */
  inconclusiveMessage(): string | null {
    const missed = this.missed();
    if (!missed.length) return null;
    const why = { tries: `after ${MAX_FAULT_TRIES} tries`, input: 'before the input ran out', time: 'before the time limit', gone: 'before the program stopped restarting' };
    return (
      `All checks held, but ${missed.length === 1 ? 'a fault the lab aims at a crash point' : `${missed.length} faults the lab aims at crash points`} never hit ${missed.length === 1 ? 'it' : 'them'}: ` +
      missed.map((f) => `${describe(f)} (i${f.instance}, ${why[f.reason]})`).join('; ') +
      '. Your program reaches those points, but not when the fault was armed (was it stuck after an earlier fault?): the grade is not conclusive. Look at the timeline, then grade again.'
    );
  }

  /** A line for the pass message about faults that fell back by design, or ''. */
  designNote(): string {
    const skipped = this.notInDesign();
    if (!skipped.length) return '';
    return ` ${skipped.map((f) => describe(f)).join('; ')}: your program never makes ${skipped.length === 1 ? 'that call' : 'those calls'}, so ${skipped.length === 1 ? 'it' : 'they'} fired at the nearest point instead.`;
  }

  /**
   * Where an owed fault is armed again: at the seed's pick among its points when the program has
   * reached it, else at the first of its points the program has reached. A design that never makes
   * the picked call (offsets committed by the consumer, never sent in the transaction) is met where
   * it does the same work, instead of the grade waiting tries long at a call that never comes.
   */
  private rearmPoint(fault: PlannedFault): CrashPoint | undefined {
    if (!fault.points?.length || (fault.crashPoint && this.reached.has(fault.crashPoint))) return fault.crashPoint;
    return fault.points.find((p) => this.reached.has(p)) ?? fault.crashPoint;
  }

  private isReachable(points: readonly CrashPoint[]): boolean {
    return points.some((p) => this.reached.has(p));
  }
}
