/**
 * The coverage rule and the lab facts for labs loaded from disk (the rule itself is pure and
 * shared with the site: src/shared/lab-coverage.ts). `kafkaiq check` refuses a lab that breaks
 * it, `kafkaiq labs` prints the facts, and tests/unit/coverage.test.ts applies it to every lab in
 * CI.
 */
import { coverageProblems, declaredFixtures, type FixtureDeclaration } from '../../src/shared/lab-coverage.ts';
import { labFacts, type LabFacts } from '../../src/shared/lab-facts.ts';
import { loadLab, type LoadedLab } from './load-lab.ts';

/** The fixtures of a loaded lab with what each declares (no program is read or graded). */
export function fixtureDeclarations(lab: LoadedLab): FixtureDeclaration[] {
  // Reference solutions in other clients pass too (they prove nothing can fail, but say which clients a lab was written in).
  const otherSolutions = Object.keys(lab.clients).map((client) => ({ program: `solution.${client}`, expect: 'pass' as const }));
  return [...declaredFixtures(lab.definition, lab.broken), ...otherSolutions];
}

/** Every coverage problem of the given labs, one line each (empty: the rule holds). */
export async function labCoverageProblems(labIds: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const id of labIds) {
    const lab = await loadLab(id);
    problems.push(...coverageProblems(id, lab.definition, fixtureDeclarations(lab)));
  }
  return problems;
}

export async function loadLabFacts(id: string): Promise<LabFacts> {
  const lab = await loadLab(id);
  return labFacts(id, lab.definition, fixtureDeclarations(lab));
}
