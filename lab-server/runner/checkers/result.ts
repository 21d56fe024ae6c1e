import type { CheckName, CheckResult } from '../../../src/shared/report.ts';
import { capEvidence } from './evidence.ts';

/** A check's result from its failures: passed when there are none, with their lines as evidence. */
export function checkResult(name: CheckName, failures: readonly string[], okSummary: string, failSummary: (n: number) => string): CheckResult {
  return { name, passed: failures.length === 0, summary: failures.length === 0 ? okSummary : failSummary(failures.length), evidence: capEvidence(failures) };
}
