/**
 * Every grade a learner runs, kept in one SQLite file (Node's built-in node:sqlite, WAL) so a
 * learner's progress survives a cleared browser as long as their session id is kept. Built in, so
 * installing the course compiles nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { STATE_DIR } from '../core/paths.ts';
import { KafkaIqError } from '../core/errors.ts';
import type { AttemptSummary } from '../../src/shared/messages.ts';
import { gradeReportSchema, type GradeReport } from '../../src/shared/report.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';

export const DEFAULT_ATTEMPTS_FILE = path.join(STATE_DIR, 'attempts.sqlite');
/** History lists the newest attempts only; the full record stays in the file. */
const HISTORY_LIMIT = 100;

export interface AttemptHistory {
  attempts: AttemptSummary[];
  /** Labs with at least one passing full grade (a quick grade is a smoke test, not a pass). */
  passedLabs: string[];
}

export interface AttemptStore {
  /** Saves a finished grade; returns the attempt id. */
  save(sessionId: string, report: GradeReport): number;
  history(sessionId: string, lab?: string): AttemptHistory;
  /** One full report, only if it belongs to this session. */
  get(sessionId: string, attemptId: number): GradeReport | null;
  close(): void;
}

/**
 * Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
 * Never edit a shipped step: append a new one.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE attempts (
     id          INTEGER PRIMARY KEY AUTOINCREMENT,
     session_id  TEXT    NOT NULL,
     lab         TEXT    NOT NULL,
     verdict     TEXT    NOT NULL CHECK (verdict IN ('pass', 'fail', 'inconclusive', 'error')),
     seed        INTEGER NOT NULL,
     quick       INTEGER NOT NULL CHECK (quick IN (0, 1)),
     duration_ms REAL    NOT NULL,
     created_at  TEXT    NOT NULL,
     report      TEXT    NOT NULL
   );
   CREATE INDEX attempts_by_session ON attempts (session_id, lab, id);`,
];

interface AttemptRow {
  id: number;
  lab: string;
  verdict: AttemptSummary['verdict'];
  seed: number;
  quick: 0 | 1;
  duration_ms: number;
  created_at: string;
}

export function openAttemptStore(options: { file?: string } = {}): AttemptStore {
  const file = options.file ?? DEFAULT_ATTEMPTS_FILE;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file, { timeout: 5000 });
  db.exec('PRAGMA journal_mode = WAL');
  migrate(db, file);

  const insert = db.prepare(
    `INSERT INTO attempts (session_id, lab, verdict, seed, quick, duration_ms, created_at, report)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const columns = 'id, lab, verdict, seed, quick, duration_ms, created_at';
  const listAll = db.prepare(
    `SELECT ${columns} FROM attempts WHERE session_id = ? ORDER BY id DESC LIMIT ?`,
  );
  const listLab = db.prepare(
    `SELECT ${columns} FROM attempts WHERE session_id = ? AND lab = ? ORDER BY id DESC LIMIT ?`,
  );
  const passed = db.prepare(
    `SELECT DISTINCT lab FROM attempts WHERE session_id = ? AND verdict = 'pass' AND quick = 0 ORDER BY lab`,
  );
  const one = db.prepare(`SELECT report FROM attempts WHERE id = ? AND session_id = ?`);

  return {
    save(sessionId, report) {
      const result = insert.run(
        sessionId,
        report.lab,
        report.verdict,
        report.seed,
        report.quick ? 1 : 0,
        report.stats.durationMs,
        new Date().toISOString(),
        JSON.stringify(report),
      );
      return Number(result.lastInsertRowid);
    },
    history(sessionId, lab) {
      // node:sqlite types rows loosely; these are the columns the statements select.
      const rows = (lab === undefined ? listAll.all(sessionId, HISTORY_LIMIT) : listLab.all(sessionId, lab, HISTORY_LIMIT)) as unknown as AttemptRow[];
      return {
        attempts: rows.map((row) => ({
          id: row.id,
          lab: row.lab,
          at: row.created_at,
          verdict: row.verdict,
          quick: row.quick === 1,
          seed: row.seed,
          durationMs: row.duration_ms,
        })),
        passedLabs: (passed.all(sessionId) as unknown as { lab: string }[]).map((row) => row.lab),
      };
    },
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
}

function migrate(db: DatabaseSync, file: string): void {
  const { user_version: current } = db.prepare('PRAGMA user_version').get() as { user_version: number };
  if (current > MIGRATIONS.length) {
    throw new KafkaIqError(
      'INTERNAL',
      `The attempts database is from a newer KafkaIQ (schema ${current}, this one knows ${MIGRATIONS.length}); update KafkaIQ or move ${file} away`,
    );
  }
  const pending = MIGRATIONS.slice(current);
  if (pending.length === 0) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const step of pending) db.exec(step);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}
