/**
 * The effect checks of database labs, from the rows the program left (AttemptDatabase.readRows):
 * a pure function of the lab, the inputs and the rows.
 */
import type { DatabaseSpec, ExpectedEffectSpec, LabDefinition } from '../../../src/shared/lab.ts';
import type { CheckName, CheckResult, FaultRecord } from '../../../src/shared/report.ts';
import type { EffectRow } from '../database-attempt.ts';
import type { SeededRecord } from '../seeder.ts';
import { checkEffects, type ObservedEffect } from './effects.ts';
import { capEvidence } from './evidence.ts';

const show = (v: string | null, max = 120) => (v === null ? 'null' : JSON.stringify(v.length > max ? `${v.slice(0, max)}…` : v));
const inputLabel = (r: SeededRecord) => `${r.topic}-${r.partition}@${r.offset} key=${r.key}`;

/**
 * The rows per id, with when each was written where the database keeps commit timestamps, and
 * the fault that came before the repeat: usually what made the program write it again.
 */
function observedRows(rows: readonly EffectRow[], timeline: { faults: readonly FaultRecord[]; startedAt: number }): ObservedEffect[] {
  const byId = new Map<string, EffectRow[]>();
  for (const row of rows) byId.set(row.id, [...(byId.get(row.id) ?? []), row]);
  const at = (ms: number) => `+${((ms - timeline.startedAt) / 1000).toFixed(1)} s`;
  return [...byId].map(([id, list]) => {
    const times = list.map((r) => r.writtenAt).filter((t): t is number => t !== undefined).sort((a, b) => a - b);
    if (times.length < 2 || !timeline.startedAt) return { id, count: list.length };
    const repeat = times[1]!;
    const fault = [...timeline.faults].reverse().find((f) => timeline.startedAt + f.atMs <= repeat);
    const after = fault ? `; the repeat came after fault ${fault.kind} on ${fault.instance}${fault.crashPoint ? ` at ${fault.crashPoint}` : ''} (${at(timeline.startedAt + fault.atMs)})` : '';
    return { id, count: list.length, note: `(written at ${times.slice(0, 5).map(at).join(', ')}${times.length > 5 ? ', …' : ''}${after})` };
  });
}

/**
 * no-duplicate-effects and no-lost-effects (checkEffects), effects-correct (each row's value is
 * what its input gives) and no-aborted-reads (no effect of an input written in an aborted
 * transaction), for the ones the lab lists. Also the number of rows, for the report's stats.
 */
export function checkDatabaseEffects(
  spec: DatabaseSpec,
  lab: Pick<LabDefinition, 'checks'>,
  inputs: readonly SeededRecord[],
  read: { rows: EffectRow[] } | { error: string },
  timeline: { faults: readonly FaultRecord[]; startedAt: number } = { faults: [], startedAt: 0 },
): { checks: CheckResult[]; rows: number } {
  const wanted = (name: CheckName) => lab.checks.includes(name);
  const what = spec.what;
  if ('error' in read) {
    // The program dropped or changed the lab's table, or the database is gone: nothing to count.
    const summary = `the grader could not read the ${what}s: ${read.error}`;
    const names: CheckName[] = ['no-duplicate-effects', 'no-lost-effects', 'effects-correct', 'no-aborted-reads'];
    return { checks: names.filter(wanted).map((name) => ({ name, passed: false, summary, evidence: [spec.effects] })), rows: 0 };
  }
  const { rows } = read;
  const effects = new Map<number, ExpectedEffectSpec | null>();
  const effectOf = (input: SeededRecord): ExpectedEffectSpec | null => {
    if (!effects.has(input.index)) effects.set(input.index, spec.effect(input));
    return effects.get(input.index)!;
  };
  // Inputs come in seeding order: when several committed inputs share an id, the LAST one's
  // value is the one its row must hold (an upsert of the latest value, e.g. a window's count).
  const expected = new Map<string, { input: SeededRecord; effect: ExpectedEffectSpec }>();
  for (const input of inputs.filter((r) => r.committed)) {
    const effect = effectOf(input);
    if (effect) expected.set(effect.id, { input, effect });
  }
  const aborted = new Map<string, SeededRecord>();
  // Ids that committed inputs share with aborted ones (the latest value of a key wins): a row
  // holding a value that only an aborted input carries was read from an aborted transaction.
  const committedValues = new Map<string, Set<string>>();
  for (const input of inputs.filter((r) => r.committed)) {
    const effect = effectOf(input);
    if (effect?.value !== undefined) committedValues.set(effect.id, (committedValues.get(effect.id) ?? new Set()).add(effect.value));
  }
  const abortedValues = new Map<string, Map<string, SeededRecord>>();
  for (const input of inputs.filter((r) => !r.committed)) {
    const effect = effectOf(input);
    if (effect && !expected.has(effect.id)) aborted.set(effect.id, input);
    else if (effect?.value !== undefined && !committedValues.get(effect.id)?.has(effect.value)) {
      abortedValues.set(effect.id, (abortedValues.get(effect.id) ?? new Map()).set(effect.value, input));
    }
  }
  const abortedValueOf = (r: EffectRow) => (r.value === null ? undefined : abortedValues.get(r.id)?.get(r.value));
  // Effects of aborted inputs are their own check when the lab lists it; otherwise they show up
  // under no-duplicate-effects as effects no committed input asks for.
  const abortedRows = wanted('no-aborted-reads') ? rows.filter((r) => aborted.has(r.id)) : [];
  const abortedValueRows = wanted('no-aborted-reads') ? rows.filter((r) => abortedValueOf(r)) : [];
  const counted = abortedRows.length ? rows.filter((r) => !aborted.has(r.id)) : rows;
  const checks = checkEffects(
    [...expected].map(([id, { input }]) => ({ id, source: inputLabel(input) })),
    observedRows(counted, timeline),
    what,
  );

  const wrong: string[] = [];
  for (const row of rows) {
    const want = expected.get(row.id);
    if (!want || want.effect.value === undefined || row.value === want.effect.value) continue;
    wrong.push(`${inputLabel(want.input)}: ${what} "${row.id}" is ${show(row.value)}, expected ${show(want.effect.value)}`);
  }
  checks.push({
    name: 'effects-correct',
    passed: wrong.length === 0,
    summary: wrong.length === 0 ? `every ${what} holds what its input says` : `${wrong.length} ${what}s do not hold what their input says`,
    evidence: capEvidence(wrong),
  });
  const abortedIds = [...new Set(abortedRows.map((r) => r.id))];
  const abortedEvidence = [
    ...abortedIds.map((id) => `${what} "${id}" comes from aborted input ${inputLabel(aborted.get(id)!)}`),
    ...abortedValueRows.map((r) => `${what} "${r.id}" holds ${show(r.value)}, the value of aborted input ${inputLabel(abortedValueOf(r)!)}`),
  ];
  const abortedCount = abortedIds.length + new Set(abortedValueRows.map((r) => r.id)).size;
  checks.push({
    name: 'no-aborted-reads',
    passed: abortedEvidence.length === 0,
    summary:
      abortedEvidence.length === 0
        ? `no ${what}s for any of the ${inputs.filter((r) => !r.committed).length} aborted input records`
        : `${abortedCount} ${what}s come from input written in aborted transactions (read_uncommitted?)`,
    evidence: capEvidence(abortedEvidence),
  });
  return { checks, rows: rows.length };
}
