/**
 * The effect checks (no-duplicate-effects, no-lost-effects, effects-correct, and no-aborted-reads
 * for a database) share one count of what the program did outside Kafka: the rows of the lab's
 * database (database-effects.ts) or the effects the lab API applied (api-effects.ts). Computed
 * once per grade.
 */
import type { CheckName, CheckResult } from '../../../src/shared/report.ts';
import { checkApiEffects } from './api-effects.ts';
import { memoize, type Collected, type GradeHistory } from './contract.ts';
import { checkDatabaseEffects } from './database-effects.ts';

export const effectFindings = memoize((collected: Collected, history: GradeHistory): Map<CheckName, CheckResult> | null => {
  const pipeline = collected.pipeline;
  if (!pipeline) return null;
  const { lab, inputs, database, api } = pipeline;
  // The database counts what the program did when a lab has both: its rows are the effects.
  if (database) return new Map(checkDatabaseEffects(database.spec, lab, inputs, database.read, history).checks.map((c) => [c.name, c]));
  if (api) return new Map(checkApiEffects({ api: api.spec, effects: api.effects, inputs, faults: history.faults, startedAt: history.startedAt }).map((c) => [c.name, c]));
  return null;
});

/** How many effects the program left (the report's output count for effect labs). */
export function effectRows(collected: Collected): number {
  const read = collected.pipeline?.database?.read;
  return read && 'rows' in read ? read.rows.length : 0;
}
