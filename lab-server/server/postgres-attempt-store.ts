/**
 * The attempt store on PostgreSQL (KAFKAIQ_DATABASE_URL), for several lab servers behind one load
 * balancer: a learner who grades through one server and comes back through another finds their
 * history, and every server's class view shows the whole class. The same contract as the SQLite
 * file (attempt-store.ts), the same rules: code kept with the newest attempts of a lab only,
 * replays never a pass, names unique by what they look like. Migrations run under an advisory
 * lock, so servers starting together apply each step once.
 */
import pg from 'pg';
import { displayNameKey } from '../../src/shared/class-view.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import type { AttemptSummary, SolutionReveal } from '../../src/shared/messages.ts';
import { gradeReportSchema, type GradeReport } from '../../src/shared/report.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';
import { progressReportSchema } from '../../src/shared/progress.ts';
import { CODE_KEPT_PER_LAB, HISTORY_LIMIT, type AttemptStore } from './attempt-store.ts';
import { abandonedGradeReport } from './grades-in-flight.ts';
import { LEARNER_ATTEMPTS_LIMIT, learnerLabel, MAX_ROSTER_ROWS, type LabFigures, type RosterQuery, type RosterSort } from './class-queries.ts';

export const DATABASE_URL_ENV = 'KAFKAIQ_DATABASE_URL';

/** Appended to, never edited: the table kafkaiq_schema records how many ran. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE attempts (
     id            BIGSERIAL PRIMARY KEY,
     session_id    TEXT             NOT NULL,
     lab           TEXT             NOT NULL,
     verdict       TEXT             NOT NULL CHECK (verdict IN ('pass', 'fail', 'inconclusive', 'error')),
     seed          BIGINT           NOT NULL,
     quick         BOOLEAN          NOT NULL,
     replay        BOOLEAN          NOT NULL,
     duration_ms   DOUBLE PRECISION NOT NULL,
     created_at    TIMESTAMPTZ      NOT NULL DEFAULT now(),
     report        JSONB            NOT NULL,
     failed_checks JSONB            NOT NULL,
     code          TEXT
   );
   CREATE INDEX attempts_by_session ON attempts (session_id, lab, id) INCLUDE (verdict, quick, replay, created_at);
   CREATE INDEX attempts_by_lab ON attempts (lab, session_id);
   CREATE TABLE learners (
     session_id   TEXT PRIMARY KEY,
     display_name TEXT        NOT NULL,
     name_key     TEXT        NOT NULL UNIQUE,
     updated_at   TIMESTAMPTZ NOT NULL
   );
   CREATE TABLE reveals (
     id          BIGSERIAL PRIMARY KEY,
     session_id  TEXT        NOT NULL,
     lab         TEXT        NOT NULL,
     created_at  TIMESTAMPTZ NOT NULL,
     before_pass BOOLEAN     NOT NULL
   );
   CREATE INDEX reveals_by_session ON reveals (session_id, lab, id);`,
  `CREATE TABLE grades_in_flight (
     id         BIGSERIAL PRIMARY KEY,
     session_id TEXT        NOT NULL,
     lab        TEXT        NOT NULL,
     quick      BOOLEAN     NOT NULL,
     seed       BIGINT,
     server     TEXT        NOT NULL,
     started_at TIMESTAMPTZ NOT NULL,
     alive_at   TIMESTAMPTZ NOT NULL DEFAULT now()
   );
   CREATE INDEX grades_in_flight_by_session ON grades_in_flight (session_id);`,
  `CREATE TABLE progress (
     session_id       TEXT PRIMARY KEY,
     report           JSONB       NOT NULL,
     lessons_complete INTEGER     NOT NULL,
     updated_at       TIMESTAMPTZ NOT NULL
   );`,
];

const PASSED = `verdict = 'pass' AND NOT quick AND NOT replay`;
const ORDER: Record<RosterSort, string> = {
  name: 'l.name_key IS NULL, l.name_key, s.session_id',
  attempts: 's.attempts DESC, s.session_id',
  passed: 's.passed DESC, s.attempts, s.session_id',
  last: 's.last_at DESC, s.session_id',
};
const iso = (value: Date | string) => new Date(value).toISOString();

interface AttemptRow {
  id: string;
  lab: string;
  verdict: AttemptSummary['verdict'];
  seed: string;
  quick: boolean;
  duration_ms: number;
  created_at: Date;
  has_code: boolean;
  n: string;
}

const summaryOf = (row: AttemptRow): AttemptSummary => ({
  id: Number(row.id),
  lab: row.lab,
  at: iso(row.created_at),
  verdict: row.verdict,
  quick: row.quick,
  seed: Number(row.seed),
  durationMs: row.duration_ms,
  hasCode: row.has_code,
  n: Number(row.n),
});
const reportOf = (value: unknown, what: string): GradeReport => parseWithFriendlyErrors(gradeReportSchema, value, what, 'INTERNAL');

/** Connects, migrates and answers; an unreachable database is one line naming the setting. */
export async function openPostgresAttemptStore(url: string): Promise<AttemptStore> {
  const pool = new pg.Pool({ connectionString: url, max: 8, connectionTimeoutMillis: 5_000 });
  // An idle connection the server dropped (a restart) must not crash the lab server: the next query reconnects.
  pool.on('error', () => {});
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end().catch(() => {}); // already failing: the error below is the one to report
    throw new KafkaIqError('DATABASE_UNAVAILABLE', `${DATABASE_URL_ENV} names a PostgreSQL that cannot be used (${describeError(err)}): start it, or unset ${DATABASE_URL_ENV} to keep attempts in .kafkaiq/attempts.sqlite.`, { cause: err });
  }
  const q = async <T>(text: string, values: unknown[] = []) => (await pool.query(text, values)).rows as T[];
  const inTransaction = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {}); // the connection is released below either way
      throw err;
    } finally {
      client.release();
    }
  };
  const columns = `id, lab, verdict, seed, quick, duration_ms, created_at, code IS NOT NULL AS has_code, ROW_NUMBER() OVER (PARTITION BY lab ORDER BY id) AS n`;
  const passedLabs = async (sessionId: string) => (await q<{ lab: string }>(`SELECT DISTINCT lab FROM attempts WHERE session_id = $1 AND ${PASSED} ORDER BY lab`, [sessionId])).map((r) => r.lab);
  const reveals = async (sessionId: string, lab?: string): Promise<SolutionReveal[]> =>
    (
      await q<{ lab: string; created_at: Date; before_pass: boolean }>(
        `SELECT lab, created_at, before_pass FROM reveals WHERE session_id = $1 AND ($2::text IS NULL OR lab = $2) ORDER BY id DESC LIMIT 100`,
        [sessionId, lab ?? null],
      )
    ).map((r) => ({ lab: r.lab, at: iso(r.created_at), beforePass: r.before_pass }));
  const oneAttempt = async (sessionId: string, attemptId: number) =>
    (await q<AttemptRow & { report: unknown; code: string | null }>(`SELECT * FROM (SELECT ${columns}, report, code FROM attempts WHERE session_id = $1) t WHERE id = $2`, [sessionId, attemptId]))[0];

  const store: AttemptStore = {
    async gradeStarted(sessionId, grade) {
      const [row] = await q<{ id: string }>(`INSERT INTO grades_in_flight (session_id, lab, quick, seed, server, started_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, [
        sessionId,
        grade.lab,
        grade.quick,
        grade.seed,
        grade.server,
        grade.startedAt,
      ]);
      return Number(row!.id);
    },
    async gradesAlive(ids) {
      if (ids.length) await q(`UPDATE grades_in_flight SET alive_at = now() WHERE id = ANY($1::bigint[])`, [ids]);
    },
    async gradeEnded(id) {
      await q(`DELETE FROM grades_in_flight WHERE id = $1`, [id]);
    },
    async reapAbandonedGrades(sessionId, staleMs) {
      // Deleted and returned in one statement: of two servers reaping at once, each row goes to one.
      const rows = await q<{ id: string; lab: string; quick: boolean; seed: string | null; server: string; started_at: Date }>(
        `DELETE FROM grades_in_flight WHERE session_id = $1 AND alive_at < now() - make_interval(secs => $2) RETURNING id, lab, quick, seed, server, started_at`,
        [sessionId, staleMs / 1000],
      );
      for (const row of rows) {
        await store.save(sessionId, abandonedGradeReport({ id: Number(row.id), lab: row.lab, quick: row.quick, seed: row.seed === null ? null : Number(row.seed), server: row.server, startedAt: iso(row.started_at) }));
      }
      return rows.length;
    },
    async save(sessionId, report, code) {
      return inTransaction(async (client) => {
        const failed = report.checks.filter((c) => !c.passed).map((c) => c.name);
        const { rows } = await client.query<{ id: string }>(
          `INSERT INTO attempts (session_id, lab, verdict, seed, quick, replay, duration_ms, report, failed_checks, code)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
          [sessionId, report.lab, report.verdict, report.seed, report.quick, Boolean(report.replay), report.stats.durationMs, JSON.stringify(report), JSON.stringify(failed), code ?? null],
        );
        await client.query(
          `UPDATE attempts SET code = NULL WHERE session_id = $1 AND lab = $2 AND code IS NOT NULL
              AND id < (SELECT MIN(id) FROM (SELECT id FROM attempts WHERE session_id = $1 AND lab = $2 ORDER BY id DESC LIMIT $3) newest)`,
          [sessionId, report.lab, CODE_KEPT_PER_LAB],
        );
        return Number(rows[0]!.id);
      });
    },
    async recordReveal(sessionId, lab) {
      const [graded] = await q(`SELECT 1 FROM attempts WHERE session_id = $1 AND lab = $2 LIMIT 1`, [sessionId, lab]);
      if (!graded) return 'no-grade';
      const [passed] = await q(`SELECT 1 FROM attempts WHERE session_id = $1 AND lab = $2 AND ${PASSED} LIMIT 1`, [sessionId, lab]);
      const at = new Date().toISOString();
      await q(`INSERT INTO reveals (session_id, lab, created_at, before_pass) VALUES ($1, $2, $3, $4)`, [sessionId, lab, at, !passed]);
      return { lab, at, beforePass: !passed };
    },
    async setDisplayName(sessionId, displayName) {
      if (displayName === null) {
        await q(`DELETE FROM learners WHERE session_id = $1`, [sessionId]);
        return 'saved';
      }
      const key = displayNameKey(displayName);
      const [owner] = await q<{ session_id: string }>(`SELECT session_id FROM learners WHERE name_key = $1`, [key]);
      if (owner && owner.session_id !== sessionId) return 'taken';
      try {
        await q(
          `INSERT INTO learners (session_id, display_name, name_key, updated_at) VALUES ($1, $2, $3, now())
           ON CONFLICT (session_id) DO UPDATE SET display_name = excluded.display_name, name_key = excluded.name_key, updated_at = excluded.updated_at`,
          [sessionId, displayName, key],
        );
      } catch (err) {
        // Another server gave that name away between the check and the write: the unique key decides.
        if ((err as { code?: string }).code === '23505') return 'taken';
        throw err;
      }
      return 'saved';
    },
    async adopt(from, to) {
      if (from === to) return 0;
      const [holds] = await q(`SELECT 1 FROM attempts WHERE session_id = $1 UNION ALL SELECT 1 FROM reveals WHERE session_id = $1 UNION ALL SELECT 1 FROM progress WHERE session_id = $1 LIMIT 1`, [from]);
      if (!holds) return 0;
      return inTransaction(async (client) => {
        const moved = await client.query(`UPDATE attempts SET session_id = $1 WHERE session_id = $2`, [to, from]);
        await client.query(`UPDATE reveals SET session_id = $1 WHERE session_id = $2`, [to, from]);
        // The account's own progress, when it has some, stays: this browser reports its own again.
        await client.query(`UPDATE progress SET session_id = $1 WHERE session_id = $2 AND NOT EXISTS (SELECT 1 FROM progress WHERE session_id = $1)`, [to, from]);
        await client.query(`DELETE FROM progress WHERE session_id = $1`, [from]);
        await client.query(`DELETE FROM learners WHERE session_id = $1`, [from]);
        return moved.rowCount ?? 0;
      });
    },
    async history(sessionId, lab) {
      const rows = await q<AttemptRow>(`SELECT * FROM (SELECT ${columns} FROM attempts WHERE session_id = $1) t WHERE $2::text IS NULL OR lab = $2 ORDER BY id DESC LIMIT $3`, [
        sessionId,
        lab ?? null,
        HISTORY_LIMIT,
      ]);
      return { attempts: rows.map(summaryOf), passedLabs: await passedLabs(sessionId), reveals: await reveals(sessionId, lab) };
    },
    async get(sessionId, attemptId) {
      const row = await oneAttempt(sessionId, attemptId);
      return row ? reportOf(row.report, `Stored attempt ${attemptId}`) : null;
    },
    async attempt(sessionId, attemptId) {
      const row = await oneAttempt(sessionId, attemptId);
      return row ? { summary: summaryOf(row), report: reportOf(row.report, `Stored attempt ${attemptId}`), code: row.code } : null;
    },
    async classRoster(query: RosterQuery) {
      const params = [query.lab ?? '', query.name ? displayNameKey(query.name) : ''];
      const summaries = `SELECT session_id, COUNT(*) AS attempts, MAX(created_at) AS last_at, COUNT(DISTINCT CASE WHEN ${PASSED} THEN lab END) AS passed
          FROM attempts WHERE ($1 = '' OR session_id IN (SELECT session_id FROM attempts WHERE lab = $1)) GROUP BY session_id`;
      const from = `FROM (${summaries}) s LEFT JOIN learners l ON l.session_id = s.session_id LEFT JOIN progress p ON p.session_id = s.session_id
          WHERE ($2 = '' OR strpos(COALESCE(l.name_key, ''), $2) > 0)`;
      const [{ n }] = (await q<{ n: string }>(`SELECT COUNT(*) AS n ${from}`, params)) as [{ n: string }];
      const limit = Math.max(1, Math.min(MAX_ROSTER_ROWS, Math.floor(query.limit)));
      const offset = Math.max(0, Math.floor(query.offset));
      const rows = await q<{ session_id: string; display_name: string | null; attempts: string; last_at: Date; lessons_complete: number }>(
        `SELECT s.session_id, l.display_name, s.attempts, s.last_at, COALESCE(p.lessons_complete, 0) AS lessons_complete ${from} ORDER BY ${ORDER[query.sort ?? 'name']} LIMIT $3 OFFSET $4`,
        [...params, limit, offset],
      );
      const learners = await Promise.all(
        rows.map(async (row) => ({
          label: learnerLabel(row.session_id),
          displayName: row.display_name,
          attempts: Number(row.attempts),
          passedLabs: await passedLabs(row.session_id),
          lastActivity: iso(row.last_at),
          reveals: await reveals(row.session_id),
          lessonsComplete: Number(row.lessons_complete),
        })),
      );
      return { total: Number(n), learners };
    },
    async classLearner(label) {
      const ids = await q<{ session_id: string }>(`SELECT DISTINCT session_id FROM attempts`);
      const id = ids.map((r) => r.session_id).find((s) => learnerLabel(s) === label);
      if (id === undefined) return null;
      const rows = await q<{ id: string; created_at: Date; report: unknown; code: string | null }>(`SELECT id, created_at, report, code FROM attempts WHERE session_id = $1 ORDER BY id DESC LIMIT $2`, [id, LEARNER_ATTEMPTS_LIMIT]);
      const [name] = await q<{ display_name: string }>(`SELECT display_name FROM learners WHERE session_id = $1`, [id]);
      const [saved] = await q<{ report: unknown }>(`SELECT report FROM progress WHERE session_id = $1`, [id]);
      return {
        label,
        displayName: name?.display_name ?? null,
        attempts: rows.map((r) => ({ id: Number(r.id), at: iso(r.created_at), code: r.code, report: reportOf(r.report, `Stored attempt ${r.id}`) })),
        reveals: await reveals(id),
        progress: saved ? parseWithFriendlyErrors(progressReportSchema, saved.report, 'Stored progress', 'INTERNAL') : null,
      };
    },
    async saveProgress(sessionId, report) {
      await q(
        `INSERT INTO progress (session_id, report, lessons_complete, updated_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (session_id) DO UPDATE SET report = excluded.report, lessons_complete = excluded.lessons_complete, updated_at = excluded.updated_at`,
        [sessionId, JSON.stringify(report), Object.values(report.lessons).filter((l) => l.complete).length],
      );
    },
    async classLabs() {
      const perLab = await q<{ lab: string; learners: string; attempts: string; passed: string }>(
        `SELECT lab, COUNT(DISTINCT session_id) AS learners, COUNT(*) AS attempts, COUNT(DISTINCT CASE WHEN ${PASSED} THEN session_id END) AS passed FROM attempts GROUP BY lab ORDER BY lab`,
      );
      const failing = await q<{ lab: string; name: string; failures: string }>(
        `SELECT a.lab, c.name, COUNT(*) AS failures FROM attempts a, jsonb_array_elements_text(a.failed_checks) AS c(name) GROUP BY a.lab, c.name ORDER BY a.lab, failures DESC, c.name`,
      );
      const firsts = await q<{ lab: string; n: string }>(
        `SELECT lab, MIN(n) AS n FROM (SELECT lab, session_id, ${PASSED} AS passed, ROW_NUMBER() OVER (PARTITION BY session_id, lab ORDER BY id) AS n FROM attempts) t WHERE passed GROUP BY lab, session_id`,
      );
      return perLab.map((row): LabFigures => {
        const ns = firsts.filter((f) => f.lab === row.lab).map((f) => Number(f.n)).sort((a, b) => a - b);
        const mid = Math.floor(ns.length / 2);
        return {
          lab: row.lab,
          learners: Number(row.learners),
          attempts: Number(row.attempts),
          passedLearners: Number(row.passed),
          failingChecks: failing.filter((f) => f.lab === row.lab).slice(0, 5).map((f) => ({ check: f.name, failures: Number(f.failures) })),
          medianAttemptsToPass: ns.length === 0 ? null : ns.length % 2 ? ns[mid]! : (ns[mid - 1]! + ns[mid]!) / 2,
        };
      });
    },
    async gradedLabs() {
      return (await q<{ lab: string }>(`SELECT DISTINCT lab FROM attempts ORDER BY lab`)).map((r) => r.lab);
    },
    async close() {
      await pool.end();
    },
  };
  return store;
}

async function migrate(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // One server at a time: the others wait here, then find the steps already applied.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('kafkaiq attempt store'))`);
    await client.query(`CREATE TABLE IF NOT EXISTS kafkaiq_schema (version INTEGER NOT NULL)`);
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM kafkaiq_schema`);
    const current = rows[0]?.version ?? 0;
    if (current > MIGRATIONS.length) throw new Error(`the database is from a newer KafkaIQ (schema ${current}, this one knows ${MIGRATIONS.length}): update KafkaIQ`);
    for (const step of MIGRATIONS.slice(current)) await client.query(step);
    if (rows.length === 0) await client.query(`INSERT INTO kafkaiq_schema (version) VALUES ($1)`, [MIGRATIONS.length]);
    else await client.query(`UPDATE kafkaiq_schema SET version = $1`, [MIGRATIONS.length]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {}); // the migration's own error is the one to report
    throw err;
  } finally {
    client.release();
  }
}
