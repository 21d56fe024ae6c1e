/** The one place that selects the lab's checks: those it lists, in its order, from every check a scenario decided. */
import type { CheckName, CheckResult } from '../../../src/shared/report.ts';

export function selectLabChecks(listed: readonly CheckName[], decided: readonly CheckResult[]): CheckResult[] {
  const byName = new Map(decided.map((c) => [c.name, c]));
  return listed.map((name) => byName.get(name)).filter((c): c is CheckResult => c !== undefined);
}
