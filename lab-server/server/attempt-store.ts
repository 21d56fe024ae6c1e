/**
 * Every grade a learner runs, kept in one SQLite file (Node's built-in node:sqlite, WAL) so a
 * learner's progress survives a cleared browser as long as their session id is kept. Built in, so
 * installing the course compiles nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { STATE_DIR } from '../core/paths.ts';
import { displayNameKey } from '../../src/shared/class-view.ts';
import type { AttemptSummary, SolutionReveal } from '../../src/shared/messages.ts';
import { gradeReportSchema, type GradeReport } from '../../src/shared/report.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';
import { progressReportSchema, type ProgressReport } from '../../src/shared/progress.ts';
import { abandonedGradeReport, type GradeInFlight } from './grades-in-flight.ts';
import { fillNameKeys, migrate } from './sqlite-schema.ts';
import { classQueries, type LabFigures, type LearnerDetail, type RosterPage, type RosterQuery } from './class-queries.ts';

export const DEFAULT_ATTEMPTS_FILE = path.join(STATE_DIR, 'attempts.sqlite');
/** History lists the newest attempts only; the full record stays in the file. */
export const HISTORY_LIMIT = 100;
/**
 * The graded program is kept with the newest attempts of each lab and learner only: older
 * attempts keep their report and lose their code, so one learner's grades cannot fill the disk
 * (each program is at most MAX_CODE_BYTES, 256 KB).
 */
export const CODE_KEPT_PER_LAB = 50;

export interface AttemptHistory {
  attempts: AttemptSummary[];
  /** Labs with at least one passing full grade (a quick grade is a smoke test, not a pass). */
  passedLabs: string[];
  /** The reference solutions this learner revealed (of the lab asked for, or of every lab), newest first. */
  reveals: SolutionReveal[];
}

/** One attempt in full: what the history lists, its report and the program it graded. */
export interface StoredAttempt {
  summary: AttemptSummary;
  report: GradeReport;
  /** null when the attempt is older than the CODE_KEPT_PER_LAB newest of its lab, or was saved without it. */
  code: string | null;
}

/**
 * Where learners' work is kept: node:sqlite in one file (the default), or PostgreSQL shared by
 * several lab servers (postgres-attempt-store.ts). Asynchronous, as a database across a network is.
 */
export interface AttemptStore {
  /** Saves a finished grade, with the program it graded; returns the attempt id. */
  save(sessionId: string, report: GradeReport, code?: string): Promise<number>;
  /**
   * Records that the learner was shown a lab's reference solution; 'no-grade' (nothing recorded)
   * when this session has not graded that lab yet: the solution comes after an attempt.
   */
  recordReveal(sessionId: string, lab: string): Promise<SolutionReveal | 'no-grade'>;
  /**
   * Sets (or with null, forgets) the name the learner chose to show their instructor; 'taken'
   * when another learner's name looks the same (displayNameKey), and nothing changes then.
   */
  setDisplayName(sessionId: string, displayName: string | null): Promise<'saved' | 'taken'>;
  /**
   * Moves everything kept under one learner id (attempts, reveals) to another: an anonymous
   * browser's work joins the account it signs in to. Its self-chosen name is dropped (a signed-in
   * learner is named by the provider). Returns the attempts moved.
   */
  adopt(fromSessionId: string, toSessionId: string): Promise<number>;
  /** One page of the learners with at least one grade, sorted and filtered, for the class view. */
  classRoster(query: RosterQuery): Promise<RosterPage>;
  /** One learner's attempts with their reports and code, by the label the class view shows; null when unknown. */
  classLearner(label: string): Promise<LearnerDetail | null>;
  /** Per lab: learners, attempts, passes, the checks failing most, the median attempts to a pass. */
  classLabs(): Promise<LabFigures[]>;
  /** The labs anybody graded. */
  gradedLabs(): Promise<string[]>;
  /** Keeps the lesson progress the learner's browser last reported (src/shared/progress.ts). */
  saveProgress(sessionId: string, report: ProgressReport): Promise<void>;
  history(sessionId: string, lab?: string): Promise<AttemptHistory>;
  /** Records a grade this server has begun (grades-in-flight.ts); returns its id. */
  gradeStarted(sessionId: string, grade: Omit<GradeInFlight, 'id'>): Promise<number>;
  /** This server is still running these grades. */
  gradesAlive(ids: number[]): Promise<void>;
  /** The grade ended (its report saved, or it was stopped). */
  gradeEnded(id: number): Promise<void>;
  /** The learner's grades untouched for `staleMs` become attempts with the verdict error; returns how many. */
  reapAbandonedGrades(sessionId: string, staleMs: number): Promise<number>;
  /** One full report, only if it belongs to this session. */
  get(sessionId: string, attemptId: number): Promise<GradeReport | null>;
  /** One attempt with its report and code, only if it belongs to this session. */
  attempt(sessionId: string, attemptId: number): Promise<StoredAttempt | null>;
  close(): Promise<void>;
}

/** The same store, answering at once: the SQLite file is read in-process. */
type Immediate<T> = { [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never };

function promised(store: Immediate<AttemptStore>): AttemptStore {
  const entries = Object.entries(store).map(([name, method]) => [name, async (...args: unknown[]) => (method as (...a: unknown[]) => unknown)(...args)]);
  return Object.fromEntries(entries) as unknown as AttemptStore;
}

interface AttemptRow {
  id: number;
  lab: string;
  verdict: AttemptSummary['verdict'];
  seed: number;
  quick: 0 | 1;
  duration_ms: number;
  created_at: string;
  has_code: 0 | 1;
  n: number;
}

interface RevealRow {
  lab: string;
  created_at: string;
  before_pass: 0 | 1;
}

/** At most this many reveals are listed per learner (one per lab is the usual count). */
const REVEALS_LIMIT = 100;

export function openAttemptStore(options: { file?: string } = {}): AttemptStore {
  const file = options.file ?? DEFAULT_ATTEMPTS_FILE;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file, { timeout: 5000 });
  db.exec('PRAGMA journal_mode = WAL');
  migrate(db, file);
  fillNameKeys(db);

  const insert = db.prepare(
    `INSERT INTO attempts (session_id, lab, verdict, seed, quick, duration_ms, created_at, report, code, replay, failed_checks)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  // Older attempts of the same lab and learner keep their report, not their program.
  const forgetOldCode = db.prepare(
    `UPDATE attempts SET code = NULL
      WHERE session_id = ? AND lab = ? AND code IS NOT NULL
        AND id < (SELECT MIN(id) FROM (SELECT id FROM attempts WHERE session_id = ? AND lab = ? ORDER BY id DESC LIMIT ?))`,
  );
  // n: the attempt's number among this learner's attempts of its lab (1 = the first), stable as more are added.
  const columns = `id, lab, verdict, seed, quick, duration_ms, created_at, code IS NOT NULL AS has_code,
     (SELECT COUNT(*) FROM attempts b WHERE b.session_id = attempts.session_id AND b.lab = attempts.lab AND b.id <= attempts.id) AS n`;
  const listAll = db.prepare(
    `SELECT ${columns} FROM attempts WHERE session_id = ? ORDER BY id DESC LIMIT ?`,
  );
  const listLab = db.prepare(
    `SELECT ${columns} FROM attempts WHERE session_id = ? AND lab = ? ORDER BY id DESC LIMIT ?`,
  );
  const passed = db.prepare(
    // A replay (a seed the learner chose) never counts: its outcome was known before it ran.
    `SELECT DISTINCT lab FROM attempts WHERE session_id = ? AND verdict = 'pass' AND quick = 0
        AND replay = 0 ORDER BY lab`,
  );
  const one = db.prepare(`SELECT report FROM attempts WHERE id = ? AND session_id = ?`);
  const oneFull = db.prepare(`SELECT ${columns}, report, code FROM attempts WHERE id = ? AND session_id = ?`);
  const graded = db.prepare(`SELECT 1 FROM attempts WHERE session_id = ? AND lab = ? LIMIT 1`);
  const passedLab = db.prepare(
    `SELECT 1 FROM attempts WHERE session_id = ? AND lab = ? AND verdict = 'pass' AND quick = 0
        AND replay = 0 LIMIT 1`,
  );
  const insertReveal = db.prepare(`INSERT INTO reveals (session_id, lab, created_at, before_pass) VALUES (?, ?, ?, ?)`);
  const revealsAll = db.prepare(`SELECT lab, created_at, before_pass FROM reveals WHERE session_id = ? ORDER BY id DESC LIMIT ?`);
  const revealsLab = db.prepare(`SELECT lab, created_at, before_pass FROM reveals WHERE session_id = ? AND lab = ? ORDER BY id DESC LIMIT ?`);
  const reveals = (sessionId: string, lab?: string): SolutionReveal[] =>
    ((lab === undefined ? revealsAll.all(sessionId, REVEALS_LIMIT) : revealsLab.all(sessionId, lab, REVEALS_LIMIT)) as unknown as RevealRow[]).map((row) => ({
      lab: row.lab,
      at: row.created_at,
      beforePass: row.before_pass === 1,
    }));
  const upsertName = db.prepare(
    `INSERT INTO learners (session_id, display_name, updated_at, name_key) VALUES (?, ?, ?, ?)
     ON CONFLICT (session_id) DO UPDATE SET display_name = excluded.display_name, updated_at = excluded.updated_at, name_key = excluded.name_key`,
  );
  const nameOwner = db.prepare(`SELECT session_id FROM learners WHERE name_key = ?`);
  const deleteName = db.prepare(`DELETE FROM learners WHERE session_id = ?`);
  const upsertProgress = db.prepare(
    `INSERT INTO progress (session_id, report, lessons_complete, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (session_id) DO UPDATE SET report = excluded.report, lessons_complete = excluded.lessons_complete, updated_at = excluded.updated_at`,
  );
  const progressOf = db.prepare(`SELECT report FROM progress WHERE session_id = ?`);
  const moveProgress = db.prepare(`UPDATE OR IGNORE progress SET session_id = ? WHERE session_id = ?`);
  const dropProgress = db.prepare(`DELETE FROM progress WHERE session_id = ?`);
  const classView = classQueries(db, (sessionId) => reveals(sessionId), (sessionId) => {
    const row = progressOf.get(sessionId) as { report: string } | undefined;
    return row ? parseWithFriendlyErrors(progressReportSchema, JSON.parse(row.report), 'Stored progress', 'INTERNAL') : null;
  });
  const holdsAnything = db.prepare(
    `SELECT 1 FROM attempts WHERE session_id = ? UNION ALL SELECT 1 FROM reveals WHERE session_id = ? UNION ALL SELECT 1 FROM progress WHERE session_id = ? LIMIT 1`,
  );
  const moveAttempts = db.prepare(`UPDATE attempts SET session_id = ? WHERE session_id = ?`);
  const moveReveals = db.prepare(`UPDATE reveals SET session_id = ? WHERE session_id = ?`);

  const startGrade = db.prepare(`INSERT INTO grades_in_flight (session_id, lab, quick, seed, server, started_at, alive_at) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const touchGrade = db.prepare(`UPDATE grades_in_flight SET alive_at = ? WHERE id = ?`);
  const endGrade = db.prepare(`DELETE FROM grades_in_flight WHERE id = ?`);
  const staleGrades = db.prepare(`SELECT id, lab, quick, seed, server, started_at FROM grades_in_flight WHERE session_id = ? AND alive_at < ?`);

  const store: Immediate<AttemptStore> = {
    gradeStarted(sessionId, grade) {
      return Number(startGrade.run(sessionId, grade.lab, grade.quick ? 1 : 0, grade.seed, grade.server, grade.startedAt, Date.now()).lastInsertRowid);
    },
    gradesAlive(ids) {
      const now = Date.now();
      for (const id of ids) touchGrade.run(now, id);
    },
    gradeEnded(id) {
      endGrade.run(id);
    },
    reapAbandonedGrades(sessionId, staleMs) {
      const rows = staleGrades.all(sessionId, Date.now() - staleMs) as unknown as Array<{ id: number; lab: string; quick: 0 | 1; seed: number | null; server: string; started_at: string }>;
      for (const row of rows) {
        // Deleted first: of two servers reaping at once, only the one that deletes it records it.
        if (Number(endGrade.run(row.id).changes) === 0) continue;
        store.save(sessionId, abandonedGradeReport({ id: row.id, lab: row.lab, quick: row.quick === 1, seed: row.seed, server: row.server, startedAt: row.started_at }));
      }
      return rows.length;
    },
    adopt(from, to) {
      // Asked on every request of a signed-in browser: a read, unless there is something to move.
      if (from === to || !holdsAnything.get(from, from, from)) return 0;
      db.exec('BEGIN IMMEDIATE');
      try {
        const moved = Number(moveAttempts.run(to, from).changes);
        moveReveals.run(to, from);
        // The account's own progress, when it has some, stays: this browser reports its own again.
        moveProgress.run(to, from);
        dropProgress.run(from);
        deleteName.run(from);
        db.exec('COMMIT');
        return moved;
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    },
    save(sessionId, report, code) {
      db.exec('BEGIN IMMEDIATE');
      try {
        const result = insert.run(
          sessionId,
          report.lab,
          report.verdict,
          report.seed,
          report.quick ? 1 : 0,
          report.stats.durationMs,
          new Date().toISOString(),
          JSON.stringify(report),
          code ?? null,
          report.replay ? 1 : 0,
          JSON.stringify(report.checks.filter((c) => !c.passed).map((c) => c.name)),
        );
        forgetOldCode.run(sessionId, report.lab, sessionId, report.lab, CODE_KEPT_PER_LAB);
        db.exec('COMMIT');
        return Number(result.lastInsertRowid);
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    },
    recordReveal(sessionId, lab) {
      if (!graded.get(sessionId, lab)) return 'no-grade';
      const at = new Date().toISOString();
      const beforePass = !passedLab.get(sessionId, lab);
      insertReveal.run(sessionId, lab, at, beforePass ? 1 : 0);
      return { lab, at, beforePass };
    },
    attempt(sessionId, attemptId) {
      const row = oneFull.get(attemptId, sessionId) as (AttemptRow & { report: string; code: string | null }) | undefined;
      if (!row) return null;
      return {
        summary: summaryOf(row),
        report: parseWithFriendlyErrors(gradeReportSchema, JSON.parse(row.report), `Stored attempt ${attemptId}`, 'INTERNAL'),
        code: row.code,
      };
    },
    history(sessionId, lab) {
      // node:sqlite types rows loosely; these are the columns the statements select.
      const rows = (lab === undefined ? listAll.all(sessionId, HISTORY_LIMIT) : listLab.all(sessionId, lab, HISTORY_LIMIT)) as unknown as AttemptRow[];
      return {
        attempts: rows.map(summaryOf),
        passedLabs: (passed.all(sessionId) as unknown as { lab: string }[]).map((row) => row.lab),
        reveals: reveals(sessionId, lab),
      };
    },
    setDisplayName(sessionId, displayName) {
      if (displayName === null) {
        deleteName.run(sessionId);
        return 'saved';
      }
      const key = displayNameKey(displayName);
      const owner = nameOwner.get(key) as { session_id: string } | undefined;
      if (owner && owner.session_id !== sessionId) return 'taken';
      // The unique index backs this check up against another server on the same file.
      upsertName.run(sessionId, displayName, new Date().toISOString(), key);
      return 'saved';
    },
    classRoster: (query) => classView.roster(query),
    classLearner: (label) => classView.learner(label),
    classLabs: () => classView.labs(),
    saveProgress(sessionId, report) {
      upsertProgress.run(sessionId, JSON.stringify(report), Object.values(report.lessons).filter((l) => l.complete).length, new Date().toISOString());
    },
    gradedLabs: () => classView.labNames(),
    get(sessionId, attemptId) {
      const row = one.get(attemptId, sessionId) as { report: string } | undefined;
      if (!row) return null;
      // Reports written by an older version are rejected here rather than misread by the browser.
      return parseWithFriendlyErrors(gradeReportSchema, JSON.parse(row.report), `Stored attempt ${attemptId}`, 'INTERNAL');
    },
    close() {
      db.close();
    },
  };
  return promised(store);
}

function summaryOf(row: AttemptRow): AttemptSummary {
  return {
    id: row.id,
    lab: row.lab,
    at: row.created_at,
    verdict: row.verdict,
    quick: row.quick === 1,
    seed: row.seed,
    durationMs: row.duration_ms,
    hasCode: row.has_code === 1,
    n: Number(row.n),
  };
}
