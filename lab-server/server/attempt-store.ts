/**
 * Every grade a learner runs, kept in one SQLite file (better-sqlite3, WAL) so a learner's
 * progress survives a cleared browser as long as their session id is kept.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
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
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  migrate(db);

  const insert = db.prepare<[string, string, string, number, number, number, string, string]>(
    `INSERT INTO attempts (session_id, lab, verdict, seed, quick, duration_ms, created_at, report)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const columns = 'id, lab, verdict, seed, quick, duration_ms, created_at';
  const listAll = db.prepare<[string, number], AttemptRow>(
    `SELECT ${columns} FROM attempts WHERE session_id = ? ORDER BY id DESC LIMIT ?`,
  );
  const listLab = db.prepare<[string, string, number], AttemptRow>(
    `SELECT ${columns} FROM attempts WHERE session_id = ? AND lab = ? ORDER BY id DESC LIMIT ?`,
  );
  const passed = db.prepare<[string], { lab: string }>(
    `SELECT DISTINCT lab FROM attempts WHERE session_id = ? AND verdict = 'pass' AND quick = 0 ORDER BY lab`,
  );
  const one = db.prepare<[number, string], { report: string }>(`SELECT report FROM attempts WHERE id = ? AND session_id = ?`);

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
      const rows = lab === undefined ? listAll.all(sessionId, HISTORY_LIMIT) : listLab.all(sessionId, lab, HISTORY_LIMIT);
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
        passedLabs: passed.all(sessionId).map((row) => row.lab),
      };
    },
    get(sessionId, attemptId) {
      const row = one.get(attemptId, sessionId);
      if (!row) return null;
      // Reports written by an older version are rejected here rather than misread by the browser.
      return parseWithFriendlyErrors(gradeReportSchema, JSON.parse(row.report), `Stored attempt ${attemptId}`, 'INTERNAL');
    },
    close() {
      db.close();
    },
  };
}

function migrate(db: Database.Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new KafkaIqError(
      'INTERNAL',
      `The attempts database is from a newer KafkaIQ (schema ${current}, this one knows ${MIGRATIONS.length}); update KafkaIQ or move ${db.name} away`,
    );
  }
  const pending = MIGRATIONS.slice(current);
  if (pending.length === 0) return;
  db.transaction(() => {
    for (const step of pending) db.exec(step);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  })();
}
