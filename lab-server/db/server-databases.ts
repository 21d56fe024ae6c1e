/**
 * Attempt databases on a real PostgreSQL server (the lab server's DATABASE_URL). Each attempt gets
 *
 *  - a role of its own: LOGIN with a random password, NOSUPERUSER NOCREATEDB NOCREATEROLE, owner
 *    of nothing but its database;
 *  - a database of its own, `CREATE DATABASE ... TEMPLATE` the pool's pristine template: a copy
 *    of template0 made once per lab server that nobody can connect to (ALLOW_CONNECTIONS false),
 *    so nothing a learner did can be in it. Never template1: PUBLIC may connect to template1, and
 *    anybody who can connect can leave a large object there (no privilege needed) or, before
 *    PostgreSQL 15, a table in its public schema, which every later database would inherit;
 *  - CONNECT on its own database only: PUBLIC loses CONNECT and TEMPORARY on the attempt's
 *    database and on every other database the role could reach, checked for each new role.
 *
 * When the attempt ends its database goes (WITH (FORCE): the program's connections end), then
 * whatever the role still owns elsewhere, then the role.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { KafkaIqError, describeError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';

export interface DatabaseLease {
  /** Connection string of the attempt's own database: the program's DATABASE_URL, and the grader's. */
  url: string;
  /** One line for the learner: which database this is. */
  description: string;
  /** Gives the database back (dropped, or its process stopped). Every connection to it must be closed by then. */
  release(): Promise<void>;
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

/** kiq_<namespace>, as a PostgreSQL identifier: lower case, [a-z0-9_], at most 63 bytes. */
export function databaseName(namespace: string): string {
  return `kiq_${namespace.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

export class ServerDatabases {
  /** The pristine template's name, once made (made again if making it failed). */
  private template: Promise<string> | null = null;
  /** Databases whose PUBLIC CONNECT we could not revoke: said once each. */
  private readonly warned = new Set<string>();

  constructor(
    private readonly serverUrl: URL,
    private readonly log: (line: string) => void,
  ) {}

  /** Runs `task` on a connection of DATABASE_URL's user, always ended after; a server that does not answer is a DATABASE_UNAVAILABLE. */
  async withServer<T>(task: (admin: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: this.serverUrl.toString(), connectionTimeoutMillis: 10_000 });
    // A connection lost mid-task fails the task's query, which reports it.
    client.on('error', () => {});
    try {
      try {
        await client.connect();
      } catch (err) {
        throw new KafkaIqError(
          'DATABASE_UNAVAILABLE',
          `DATABASE_URL (${redactUrl(this.serverUrl.toString())}) is unreachable: ${describeError(err) || (err as { code?: string }).code}. Start that PostgreSQL server or fix DATABASE_URL, or unset it to use the embedded database.`,
          { cause: err },
        );
      }
      return await task(client);
    } finally {
      await bestEffort('close a connection to DATABASE_URL', () => client.end(), this.log);
    }
  }

  private unavailable(what: string, err: unknown): KafkaIqError {
    if (err instanceof KafkaIqError) return err;
    return new KafkaIqError(
      'DATABASE_UNAVAILABLE',
      `Could not ${what} on DATABASE_URL (${redactUrl(this.serverUrl.toString())}): ${describeError(err)}. Its user needs the CREATEDB and CREATEROLE privileges.`,
      { cause: err },
    );
  }

  /** The pristine template, made on first use: a copy of template0 that accepts no connection, ever. */
  private pristineTemplate(): Promise<string> {
    if (!this.template) {
      const name = `kafkaiq_pristine_${randomBytes(8).toString('hex')}`;
      const making = this.withServer(async (admin) => {
        await admin.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE template0 ALLOW_CONNECTIONS false`);
        await admin.query(`REVOKE ALL ON DATABASE ${quoteIdent(name)} FROM PUBLIC`);
        return name;
      });
      this.template = making;
      making.catch(() => {
        // The attempt that asked reports the failure; the next one tries again.
        if (this.template === making) this.template = null;
      });
    }
    return this.template;
  }

  /**
   * A database and a role of the attempt's own: the program's DATABASE_URL logs in as that role,
   * never as the server URL's user.
   */
  async acquire(namespace: string): Promise<DatabaseLease> {
    const name = databaseName(namespace);
    const role = name;
    const password = randomBytes(24).toString('base64url'); // [A-Za-z0-9_-]: safe inside quotes
    let template: string;
    try {
      template = await this.pristineTemplate();
    } catch (err) {
      throw this.unavailable('create the pristine template database', err);
    }
    await this.withServer(async (admin) => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`).catch(() => {
          // A lab server that crashed mid-attempt may have left these behind. A drop that fails
          // leaves them there, and the CREATE below then says why: never one that already exists.
        });
        await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`).catch(() => {}); // as the DROP DATABASE above
        await admin.query(`CREATE ROLE ${quoteIdent(role)} LOGIN PASSWORD '${password}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 32`);
        await admin.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)} OWNER ${quoteIdent(role)}`);
        await admin.query(`REVOKE ALL ON DATABASE ${quoteIdent(name)} FROM PUBLIC`);
      } catch (err) {
        throw this.unavailable(`create database ${name}`, err);
      }
      await this.confine(admin, role, name);
    });
    const url = new URL(this.serverUrl.toString());
    url.pathname = `/${name}`;
    url.username = role;
    url.password = password;
    let released = false;
    return {
      url: url.toString(),
      description: `database ${name} on ${url.host} (DATABASE_URL), created for this attempt from a pristine template, with a role of its own`,
      release: async () => {
        if (released) return;
        released = true;
        await this.drop(name, role);
      },
    };
  }

  /**
   * Every database other than its own that the new role could connect to (through PUBLIC's
   * default CONNECT) loses PUBLIC's CONNECT and TEMPORARY. One the server URL's user may not
   * change is said once, with the fix.
   */
  private async confine(admin: pg.Client, role: string, own: string): Promise<void> {
    const { rows } = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datallowconn AND datname <> $2 AND has_database_privilege($1, oid, 'CONNECT') ORDER BY datname`,
      [role, own],
    );
    for (const { datname } of rows) {
      try {
        await admin.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${quoteIdent(datname)} FROM PUBLIC`);
      } catch (err) {
        if (this.warned.has(datname)) continue;
        this.warned.add(datname);
        this.log(
          `attempt roles can connect to database ${datname} (${describeError(err)}): run REVOKE CONNECT, TEMPORARY ON DATABASE ${quoteIdent(datname)} FROM PUBLIC as its owner, or give DATABASE_URL a server of its own`,
        );
      }
    }
  }

  private async drop(name: string, role: string): Promise<void> {
    const drop = this.withServer(async (admin) => {
      // WITH (FORCE) (PostgreSQL 13+) ends connections a program left open.
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`).catch(async () => {
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
      });
      // Sessions of the role in a database it could still reach, then what it owns there (large
      // objects, say): DROP ROLE refuses a role that owns anything.
      await bestEffort(`end the sessions of role ${role}`, () => admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]), this.log);
      await bestEffort(`drop what role ${role} owns`, () => admin.query(`DROP OWNED BY ${quoteIdent(role)}`), this.log);
      await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`);
    });
    await bestEffort(`drop database ${name}`, drop, this.log);
  }

  /** Drops the pristine template (the lab server is closing). */
  async close(): Promise<void> {
    const template = this.template;
    this.template = null;
    // A template that was never made has nothing to drop.
    const name = await template?.catch(() => null);
    if (!name) return;
    await bestEffort(`drop the template database ${name}`, () => this.withServer((admin) => admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`)), this.log);
  }
}
