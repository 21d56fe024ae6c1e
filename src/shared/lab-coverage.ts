/**
 * The coverage rule of the fixture matrix: a check a lab lists is only worth something there if
 * some program of the lab is known to fail it. Every check must be named as expected-failing by
 * at least one fixture (a broken variant's `// expect-fail: <check>` line, or a command fixture's
 * `check`), or be declared in `checkCoverage` with `coverage: 'none'` and a reason.
 *
 * Pure functions over declarations: no broker, no files. `kafkaiq check` and
 * tests/unit/coverage.test.ts apply the rule statically; the fixture matrix (tests/support/labs-matrix.ts)
 * then proves each fixture really fails the check it declares. Shared with the site's Labs page,
 * hence in src/shared.
 */
import type { LabDefinition } from './lab.ts';
import { CHECK_NAMES, type CheckName } from './report.ts';

/** The first line of a broken variant: `// expect-fail: <check>`. */
const EXPECT_FAIL_LINE = /^\/\/\s*expect-fail:\s*([a-z-]+)\s*$/;

/** The check a broken variant's first line names, or null when the line is missing or names no check. */
export function parseExpectFail(source: string): CheckName | null {
  const first = source.split('\n', 1)[0] ?? '';
  const match = EXPECT_FAIL_LINE.exec(first);
  return match && (CHECK_NAMES as readonly string[]).includes(match[1]!) ? (match[1] as CheckName) : null;
}

/** What one fixture of a lab declares, as `kafkaiq check` names it (solution, starter, broken/x, cmd/x). */
export interface FixtureDeclaration {
  program: string;
  expect: 'pass' | 'fail';
  /** For expect 'fail': the check it must fail (the starter names none: failing anything is enough). */
  check?: CheckName;
}

/** The fixtures a lab folder declares, in the order `kafkaiq check` grades them. */
export function declaredFixtures(
  definition: Pick<LabDefinition, 'commandFixtures'>,
  broken: readonly { name: string; expectFail: CheckName }[],
): FixtureDeclaration[] {
  return [
    { program: 'solution', expect: 'pass' },
    { program: 'starter', expect: 'fail' },
    ...broken.map((b) => ({ program: `broken/${b.name}`, expect: 'fail' as const, check: b.expectFail })),
    ...definition.commandFixtures.map((c) => ({ program: `cmd/${c.name}`, expect: c.expect, ...(c.check ? { check: c.check } : {}) })),
  ];
}

/** How one check of a lab is proven able to fail. */
export interface CheckCoverageRow {
  check: CheckName;
  /** Fixtures that declare they fail this check (the matrix proves they do). */
  provedBy: string[];
  /** The reason, when the lab declares the check `coverage: 'none'`. */
  none?: string;
}

/** One row per check the lab lists, in the lab's order. */
export function checkCoverageRows(
  definition: Pick<LabDefinition, 'checks' | 'checkCoverage'>,
  fixtures: readonly FixtureDeclaration[],
): CheckCoverageRow[] {
  return definition.checks.map((check) => {
    const none = definition.checkCoverage.find((c) => c.check === check);
    const provedBy = fixtures.filter((f) => f.expect === 'fail' && f.check === check).map((f) => f.program);
    return { check, provedBy, ...(none ? { none: none.reason } : {}) };
  });
}

/**
 * Every way a lab breaks the coverage rule, one line each naming the file to change; empty when
 * every check is failed by a fixture or declared `coverage: 'none'`.
 */
export function coverageProblems(
  labId: string,
  definition: Pick<LabDefinition, 'checks' | 'checkCoverage'>,
  fixtures: readonly FixtureDeclaration[],
): string[] {
  const problems: string[] = [];
  const seen = new Set<CheckName>();
  for (const entry of definition.checkCoverage) {
    if (!definition.checks.includes(entry.check)) {
      problems.push(`labs/${labId}/lab.ts: checkCoverage names "${entry.check}", which is not in checks`);
    }
    if (seen.has(entry.check)) problems.push(`labs/${labId}/lab.ts: checkCoverage names "${entry.check}" twice`);
    seen.add(entry.check);
  }
  for (const row of checkCoverageRows(definition, fixtures)) {
    if (row.none !== undefined && row.provedBy.length) {
      // A stale exemption hides nothing today, but would hide the check once that fixture goes.
      problems.push(
        `labs/${labId}/lab.ts: "${row.check}" is declared coverage: 'none' but ${row.provedBy.join(', ')} fails it: remove the checkCoverage entry`,
      );
    } else if (row.none === undefined && !row.provedBy.length) {
      problems.push(
        `labs/${labId}: no fixture fails "${row.check}", so nothing proves the check can fail in this lab: ` +
          `add labs/${labId}/broken/<mistake>.ts starting with '// expect-fail: ${row.check}', ` +
          `or declare { check: '${row.check}', coverage: 'none', reason: '...' } in checkCoverage of lab.ts`,
      );
    }
  }
  return problems;
}
