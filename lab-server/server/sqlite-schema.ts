/**
 * The SQLite file's schema: its migrations, applied in order at open (`PRAGMA user_version`
 * records how many ran), and the keys of display names saved before keys existed.
 */
import type { DatabaseSync } from 'node:sqlite';
import { displayNameKey } from '../../src/shared/class-view.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';

/**
 * Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
 * Never edit a shipped step: append a new one.
 */
export const MIGRATIONS: readonly string[] = [
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
  // The class view: the only thing a learner may add about themselves.
  `CREATE TABLE learners (
     session_id   TEXT PRIMARY KEY,
     display_name TEXT NOT NULL,
     updated_at   TEXT NOT NULL
   );`,
  // Names unique within the class by what they look like; keys are filled in by fillNameKeys().
  `ALTER TABLE learners ADD COLUMN name_key TEXT;
   CREATE UNIQUE INDEX learners_by_name_key ON learners (name_key);`,
  // History: the exact program each grade graded (kept for the newest attempts only, see
  // CODE_KEPT_PER_LAB), and when a learner was shown a lab's reference solution.
  `ALTER TABLE attempts ADD COLUMN code TEXT;
   CREATE TABLE reveals (
     id          INTEGER PRIMARY KEY AUTOINCREMENT,
     session_id  TEXT    NOT NULL,
     lab         TEXT    NOT NULL,
     created_at  TEXT    NOT NULL,
     before_pass INTEGER NOT NULL CHECK (before_pass IN (0, 1))
   );
   CREATE INDEX reveals_by_session ON reveals (session_id, lab, id);`,
  // The class view's figures without reading every report: whether an attempt was a replay (never
  // a pass), and the names of the checks it failed (a JSON array), kept beside the report.
  `ALTER TABLE attempts ADD COLUMN replay INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE attempts ADD COLUMN failed_checks TEXT NOT NULL DEFAULT '[]';
   UPDATE attempts SET
     replay = CASE WHEN COALESCE(json_extract(report, '$.replay'), 0) THEN 1 ELSE 0 END,
     failed_checks = (SELECT json_group_array(json_extract(c.value, '$.name')) FROM json_each(attempts.report, '$.checks') c WHERE json_extract(c.value, '$.passed') = 0);
   -- Covering: the figures are read from this index alone, never from rows that carry whole reports and programs.
   CREATE INDEX attempts_figures ON attempts (session_id, lab, id, verdict, quick, replay, created_at, failed_checks);`,
  // Grades under way, touched by their server (alive_at, ms since the epoch) while it runs them.
  `CREATE TABLE grades_in_flight (
     id         INTEGER PRIMARY KEY AUTOINCREMENT,
     session_id TEXT    NOT NULL,
     lab        TEXT    NOT NULL,
     quick      INTEGER NOT NULL,
     seed       INTEGER,
     server     TEXT    NOT NULL,
     started_at TEXT    NOT NULL,
     alive_at   INTEGER NOT NULL
   );
   CREATE INDEX grades_in_flight_by_session ON grades_in_flight (session_id);`,
  // Lesson progress as the learner's browser last reported it, for the class view.
  `CREATE TABLE progress (
     session_id       TEXT PRIMARY KEY,
     report           TEXT    NOT NULL,
     lessons_complete INTEGER NOT NULL,
     updated_at       TEXT    NOT NULL
   );`,
];

/**
 * Names saved before keys existed get theirs; of two that look the same, the older one keeps it
 * and the newer learner is anonymous again (they can choose another name).
 */
export function fillNameKeys(db: DatabaseSync): void {
  const rows = db.prepare(`SELECT session_id, display_name FROM learners WHERE name_key IS NULL ORDER BY updated_at`).all() as unknown as { session_id: string; display_name: string }[];
  if (rows.length === 0) return;
  const taken = db.prepare(`SELECT 1 FROM learners WHERE name_key = ?`);
  const setKey = db.prepare(`UPDATE learners SET name_key = ? WHERE session_id = ?`);
  const drop = db.prepare(`DELETE FROM learners WHERE session_id = ?`);
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const row of rows) {
      const key = displayNameKey(row.display_name);
      if (key === '' || taken.get(key)) drop.run(row.session_id);
      else setKey.run(key, row.session_id);
    }
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}

export function migrate(db: DatabaseSync, file: string): void {
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
