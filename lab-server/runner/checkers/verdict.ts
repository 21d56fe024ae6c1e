/**
 * The one verdict function of every lab kind: a pure function of the checks and of what the
 * scenario says about its own faults. Zero checks is never a pass.
 */
import type { CheckName, CheckResult, Verdict } from '../../../src/shared/report.ts';

export interface VerdictInput {
  checks: readonly CheckResult[];
  /**
   * Failed checks that do not count, because the scenario could not set up what they test (a
   * monitor lab whose hanging transaction was never created cannot blame the monitor for not
   * reporting it). The verdict is then inconclusive at best.
   */
  excused?: readonly CheckName[];
  /** Appended to a fail's message (e.g. the time limit was reached). */
  failNote?: string;
  /** Why nothing was really tested though every check held (inconclusive), or null. */
  inconclusive: string | null;
  /** The message of a pass. */
  passMessage: string;
}

export function decideVerdict(input: VerdictInput): { verdict: Verdict; message: string } {
  const { checks } = input;
  if (checks.length === 0) return { verdict: 'error', message: 'No checks ran, so nothing was proven: the lab must name at least one check.' };
  const excused = new Set(input.excused ?? []);
  const failed = checks.filter((c) => !c.passed && !excused.has(c.name));
  if (failed.length) {
    return { verdict: 'fail', message: `${failed.length} of ${checks.length} checks failed: ${failed.map((c) => c.name).join(', ')}.${input.failNote ?? ''}` };
  }
  if (input.inconclusive !== null) return { verdict: 'inconclusive', message: input.inconclusive };
  return { verdict: 'pass', message: input.passMessage };
}
