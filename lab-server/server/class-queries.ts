/**
 * What the class view asks of the attempt store, in SQL over the same file: the roster (sorted,
 * filtered, one page), one learner's every attempt, and per-lab figures (attempts, pass rate, the
 * checks that fail most, the median attempts to a first pass). Learners are named in URLs by a
 * label derived from their id (never the id itself, which is their credential).
 */
import { createHash } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import { displayNameKey } from '../../src/shared/class-view.ts';
import { gradeReportSchema, type GradeReport } from '../../src/shared/report.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';
import type { SolutionReveal } from '../../src/shared/messages.ts';
import type { ProgressReport } from '../../src/shared/progress.ts';

export const ROSTER_SORTS = ['name', 'attempts', 'passed', 'last'] as const;
export type RosterSort = (typeof ROSTER_SORTS)[number];

export interface RosterQuery {
  offset: number;
  limit: number;
  sort?: RosterSort;
  /** Only learners whose name (as the class view compares names) contains this. */
  name?: string;
  /** Only learners who graded this lab. */
  lab?: string;
}

/** One learner as the roster lists them. */
export interface RosterLearner {
  /** A stable label derived from the learner id (a hash prefix): not usable as a credential. */
  label: string;
  displayName: string | null;
  attempts: number;
  /** Labs with a passing full grade (replays never count). */
  passedLabs: string[];
  /** When they last graded (ISO time). */
  lastActivity: string;
  /** Reference solutions the learner was shown, newest first (beforePass: before their first pass of that lab). */
  reveals: SolutionReveal[];
  /** Lessons complete, as their browser last reported (0: nothing reported). */
  lessonsComplete: number;
}

export interface RosterPage {
  learners: RosterLearner[];
  /** Learners matching the query (with at least one grade). */
  total: number;
}

export interface LearnerAttempt {
  id: number;
  at: string;
  report: GradeReport;
  /** null when the attempt is older than the newest kept with their code. */
  code: string | null;
}

export interface LearnerDetail {
  label: string;
  displayName: string | null;
  attempts: LearnerAttempt[];
  reveals: SolutionReveal[];
  /** Their lesson progress as their browser last reported it, or null. */
  progress: ProgressReport | null;
}

export interface LabFigures {
  lab: string;
  learners: number;
  attempts: number;
  /** Learners with a passing full grade. */
  passedLearners: number;
  /** The checks failed most often in this lab's attempts, most first (at most five). */
  failingChecks: Array<{ check: string; failures: number }>;
  /** Of the learners who passed: the median number of attempts up to their first pass (null: nobody passed). */
  medianAttemptsToPass: number | null;
}

/** The label of a learner id, as the class view shows and links it. */
export const learnerLabel = (sessionId: string) => `learner ${createHash('sha256').update(sessionId).digest('hex').slice(0, 12)}`;

const PASSED = `verdict = 'pass' AND quick = 0 AND replay = 0`;
const ORDER: Record<RosterSort, string> = {
  name: 'l.name_key IS NULL, l.name_key, s.session_id',
  attempts: 's.attempts DESC, s.session_id',
  passed: 's.passed DESC, s.attempts, s.session_id',
  last: 's.last_at DESC, s.session_id',
};
/** The most learners one roster query returns: a whole class for the CSV export (a class is far smaller). */
export const MAX_ROSTER_ROWS = 20_000;
/** One learner's page lists at most this many attempts (newest first). */
export const LEARNER_ATTEMPTS_LIMIT = 200;

export function classQueries(db: DatabaseSync, reveals: (sessionId: string) => SolutionReveal[], progress: (sessionId: string) => ProgressReport | null) {
  const passedLabs = db.prepare(`SELECT DISTINCT lab FROM attempts WHERE session_id = ? AND ${PASSED} ORDER BY lab`);
  const summaries = `SELECT session_id, COUNT(*) AS attempts, MAX(created_at) AS last_at, COUNT(DISTINCT CASE WHEN ${PASSED} THEN lab END) AS passed
      FROM attempts WHERE (:lab = '' OR session_id IN (SELECT session_id FROM attempts WHERE lab = :lab)) GROUP BY session_id`;
  const filter = `WHERE (:name = '' OR instr(COALESCE(l.name_key, ''), :name) > 0)`;
  const rosterBySort = Object.fromEntries(
    ROSTER_SORTS.map((sort) => [
      sort,
      db.prepare(
        `SELECT s.session_id, l.display_name, s.attempts, s.last_at, COALESCE(p.lessons_complete, 0) AS lessons_complete
           FROM (${summaries}) s LEFT JOIN learners l ON l.session_id = s.session_id LEFT JOIN progress p ON p.session_id = s.session_id
          ${filter} ORDER BY ${ORDER[sort]} LIMIT :limit OFFSET :offset`,
      ),
    ]),
  ) as Record<RosterSort, ReturnType<DatabaseSync['prepare']>>;
  const rosterSize = db.prepare(`SELECT COUNT(*) AS n FROM (${summaries}) s LEFT JOIN learners l ON l.session_id = s.session_id ${filter}`);
  const learnerIds = db.prepare(`SELECT DISTINCT session_id FROM attempts`);
  const gradedLabs = db.prepare(`SELECT DISTINCT lab FROM attempts ORDER BY lab`);
  const nameOf = db.prepare(`SELECT display_name FROM learners WHERE session_id = ?`);
  const attemptsOf = db.prepare(`SELECT id, created_at, report, code FROM attempts WHERE session_id = ? ORDER BY id DESC LIMIT ?`);
  const perLab = db.prepare(
    `SELECT lab, COUNT(DISTINCT session_id) AS learners, COUNT(*) AS attempts, COUNT(DISTINCT CASE WHEN ${PASSED} THEN session_id END) AS passed
       FROM attempts GROUP BY lab ORDER BY lab`,
  );
  const failing = db.prepare(
    `SELECT a.lab AS lab, c.value AS name, COUNT(*) AS failures
       FROM attempts a, json_each(a.failed_checks) c
      GROUP BY a.lab, name ORDER BY a.lab, failures DESC, name`,
  );
  // Attempts up to and including each learner's first pass of a lab.
  const toFirstPass = db.prepare(
    `SELECT lab, MIN(n) AS n FROM (
        SELECT lab, session_id, ${PASSED} AS passed, ROW_NUMBER() OVER (PARTITION BY session_id, lab ORDER BY id) AS n FROM attempts
      ) WHERE passed GROUP BY lab, session_id`,
  );

  return {
    roster(query: RosterQuery): RosterPage {
      const params = {
        lab: query.lab ?? '',
        name: query.name ? displayNameKey(query.name) : '',
        limit: Math.max(1, Math.min(MAX_ROSTER_ROWS, Math.floor(query.limit))),
        offset: Math.max(0, Math.floor(query.offset)),
      };
      const { limit, offset, ...counted } = params;
      const total = Number((rosterSize.get(counted) as { n: number }).n);
      const rows = rosterBySort[query.sort ?? 'name'].all(params) as unknown as Array<{ session_id: string; display_name: string | null; attempts: number; last_at: string; lessons_complete: number }>;
      return {
        total,
        learners: rows.map((row) => ({
          label: learnerLabel(row.session_id),
          displayName: row.display_name,
          attempts: Number(row.attempts),
          passedLabs: (passedLabs.all(row.session_id) as unknown as Array<{ lab: string }>).map((r) => r.lab),
          lastActivity: row.last_at,
          reveals: reveals(row.session_id),
          lessonsComplete: Number(row.lessons_complete),
        })),
      };
    },

    /** One learner's attempts (newest first), by their label; null when no learner has it. */
    learner(label: string): LearnerDetail | null {
      const id = (learnerIds.all() as unknown as Array<{ session_id: string }>).map((r) => r.session_id).find((s) => learnerLabel(s) === label);
      if (id === undefined) return null;
      const rows = attemptsOf.all(id, LEARNER_ATTEMPTS_LIMIT) as unknown as Array<{ id: number; created_at: string; report: string; code: string | null }>;
      return {
        label,
        displayName: (nameOf.get(id) as { display_name: string } | undefined)?.display_name ?? null,
        attempts: rows.map((r) => ({ id: r.id, at: r.created_at, code: r.code, report: parseWithFriendlyErrors(gradeReportSchema, JSON.parse(r.report), `Stored attempt ${r.id}`, 'INTERNAL') })),
        reveals: reveals(id),
        progress: progress(id),
      };
    },

    /** The labs anybody graded, for the roster's filter. */
    labNames(): string[] {
      return (gradedLabs.all() as unknown as Array<{ lab: string }>).map((r) => r.lab);
    },

    labs(): LabFigures[] {
      const checks = new Map<string, Array<{ check: string; failures: number }>>();
      for (const row of failing.all() as unknown as Array<{ lab: string; name: string; failures: number }>) {
        const list = checks.get(row.lab) ?? [];
        if (list.length < 5) list.push({ check: row.name, failures: Number(row.failures) });
        checks.set(row.lab, list);
      }
      const firstPasses = new Map<string, number[]>();
      for (const row of toFirstPass.all() as unknown as Array<{ lab: string; n: number }>) firstPasses.set(row.lab, [...(firstPasses.get(row.lab) ?? []), Number(row.n)]);
      return (perLab.all() as unknown as Array<{ lab: string; learners: number; attempts: number; passed: number }>).map((row) => ({
        lab: row.lab,
        learners: Number(row.learners),
        attempts: Number(row.attempts),
        passedLearners: Number(row.passed),
        failingChecks: checks.get(row.lab) ?? [],
        medianAttemptsToPass: median(firstPasses.get(row.lab) ?? []),
      }));
    },
  };
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
