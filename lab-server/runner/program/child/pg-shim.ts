/**
 * Stands in for `pg` (node-postgres) inside a learner's program (the bundler aliases the import,
 * as it does for kafkajs). It is the real pg with one addition: every data-changing statement
 * (INSERT, UPDATE, DELETE, MERGE, INSERT ... ON CONFLICT) and every COMMIT / END is reported to
 * the runner before and after it runs, as the crash points before:/after:db-write and
 * before:/after:db-commit, so the grader can stop the program exactly there (e.g. right after a
 * row was written and before the Kafka offset commit).
 *
 * Client.prototype.query is wrapped, which covers pg.Pool too (its clients are pg.Clients). Other
 * statements (SELECT, BEGIN, DDL) pass through untouched, and nothing is delayed unless the
 * runner armed a crash point, so the statements of a program keep their order and cost.
 *
 * The wrapper keeps its own copy of the armed crash point: the runner's arm / disarm / continue
 * messages reach every wrapper in the process (kafkajs's too), and each one only stops at its own
 * crash points.
 */
import * as realModule from 'pg-real';
import type { CrashPoint } from '../../../../src/shared/report.ts';
import { runnerChannel } from './channel.ts';
import type { ArmAction, ChildEvent, RunnerCommand } from './protocol.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const real: Any = (realModule as Any).default ?? realModule;

let armed: { point: CrashPoint; action: ArmAction; remaining: number } | null = null;
let releasePaused: (() => void) | null = null;
const channel = runnerChannel();
const send = (event: ChildEvent) => channel?.send(event);

if (channel) {
  channel.onCommand((msg: RunnerCommand) => {
    if (msg.t === 'arm') armed = msg.point.includes(':db-') ? { point: msg.point, action: msg.action, remaining: msg.occurrence } : null;
    else if (msg.t === 'disarm') armed = null;
    else if (msg.t === 'continue') {
      releasePaused?.();
      releasePaused = null;
    }
  });
}

/**
 * Reports the crash point; returns a promise only when the runner armed it and this is the hit
 * (then the statement waits: forever for a kill, until resumed for a pause). Null otherwise, so
 * the caller goes on synchronously.
 */
function checkpoint(point: CrashPoint, txnOpen: boolean): Promise<void> | null {
  send({ t: 'call', point, txnOpen });
  if (!armed || armed.point !== point || --armed.remaining > 0) return null;
  const { action } = armed;
  armed = null;
  send({ t: 'hit', point, action, txnOpen });
  if (action === 'kill') return new Promise(() => {}); // the runner sends SIGKILL
  if (action === 'pause') return new Promise<void>((resolve) => (releasePaused = resolve));
  return null; // 'stop': the runner sends SIGTERM; 'error' has no meaning for SQL
}

interface Kind {
  write: boolean;
  commit: boolean;
  begin: boolean;
  rollback: boolean;
}

const WRITE = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE']);
const COMMIT = new Set(['COMMIT', 'END']);
const BEGIN = new Set(['BEGIN', 'START']);
const ROLLBACK = new Set(['ROLLBACK', 'ABORT']);
const classified = new Map<string, Kind | null>();

/** The first keyword of a statement, past comments and a WITH clause's CTEs if they write. */
function firstKeyword(statement: string): string {
  const text = statement.replace(/^(\s|--[^\n]*\n?|\/\*[\s\S]*?\*\/)+/, '');
  const word = /^[A-Za-z]+/.exec(text)?.[0]?.toUpperCase() ?? '';
  // WITH ... INSERT / UPDATE / DELETE: a data-modifying CTE or main statement.
  if (word === 'WITH' && /\b(INSERT|UPDATE|DELETE|MERGE)\b/i.test(text)) return 'INSERT';
  return word;
}

/** What a query text does, or null for statements without a crash point (the common case: cached). */
function classify(text: string): Kind | null {
  let kind = classified.get(text);
  if (kind !== undefined) return kind;
  const words = text.split(';').map(firstKeyword).filter(Boolean);
  const k: Kind = {
    write: words.some((w) => WRITE.has(w)),
    commit: words.some((w) => COMMIT.has(w)),
    begin: words.some((w) => BEGIN.has(w)),
    rollback: words.some((w) => ROLLBACK.has(w)),
  };
  kind = k.write || k.commit || k.begin || k.rollback ? k : null;
  if (classified.size > 2_000) classified.clear();
  classified.set(text, kind);
  return kind;
}

/** Clients with an open BEGIN block (reported as txnOpen with the crash points). */
const inTransaction = new WeakSet<object>();

const originalQuery = real.Client.prototype.query;

real.Client.prototype.query = function query(this: Any, config: Any, values?: Any, callback?: Any) {
  const text: unknown = typeof config === 'string' ? config : config?.text;
  // Submittables (cursors, streams) and statements without a crash point: untouched.
  if (typeof text !== 'string' || typeof config?.submit === 'function') return originalQuery.apply(this, arguments);
  const kind = classify(text);
  if (!kind) return originalQuery.apply(this, arguments);

  const client = this;
  const open = () => inTransaction.has(client);
  const settle = (ok: boolean) => {
    if (ok && kind.begin) inTransaction.add(client);
    // A COMMIT that fails ends the transaction too (PostgreSQL rolls it back).
    if (kind.commit || kind.rollback) inTransaction.delete(client);
  };
  const before = () => {
    const held: (Promise<void> | null)[] = [];
    if (kind.write) held.push(checkpoint('before:db-write', open()));
    if (kind.commit) held.push(checkpoint('before:db-commit', true));
    return held.find((p) => p) ?? null;
  };
  const after = () => {
    const held: (Promise<void> | null)[] = [];
    if (kind.write) held.push(checkpoint('after:db-write', open()));
    if (kind.commit) held.push(checkpoint('after:db-commit', open()));
    return held.find((p) => p) ?? null;
  };

  // Callback style (pg.Pool's query uses it): query(text, cb), query(text, values, cb), query(config, cb).
  const cb = typeof values === 'function' ? values : typeof callback === 'function' ? callback : typeof config?.callback === 'function' ? config.callback : null;
  if (cb) {
    const args = typeof values === 'function' ? [config] : [config, values];
    const wrapped = (err: unknown, result: unknown) => {
      settle(!err);
      if (err) {
        send({ t: 'failed', op: kind.commit ? 'db-commit' : 'db-write', txnOpen: open(), error: String((err as Error)?.message ?? err).slice(0, 300) });
        return cb(err, result);
      }
      const held = after();
      if (held) held.then(() => cb(err, result));
      else cb(err, result);
    };
    if (config && typeof config === 'object' && typeof config.callback === 'function') {
      config = { ...config, callback: undefined };
      args[0] = config;
    }
    const held = before();
    if (held) {
      held.then(() => originalQuery.call(client, ...args, wrapped));
      return undefined;
    }
    return originalQuery.call(client, ...args, wrapped);
  }

  const run = (): Promise<unknown> =>
    (values === undefined ? originalQuery.call(client, config) : originalQuery.call(client, config, values)).then(
      (result: unknown) => {
        settle(true);
        const held = after();
        return held ? held.then(() => result) : result;
      },
      (err: unknown) => {
        send({ t: 'failed', op: kind.commit ? 'db-commit' : 'db-write', txnOpen: open(), error: String((err as Error)?.message ?? err).slice(0, 300) });
        throw err;
      },
    );
  const held = before();
  return held ? held.then(run) : run();
};

export default real;
export const { Client, Pool, Connection, types, Query, DatabaseError, escapeIdentifier, escapeLiteral, Result, TypeOverrides, defaults } = real;
