/**
 * One embedded PostgreSQL: PGlite (PostgreSQL compiled to WebAssembly) served over the Postgres
 * wire protocol on 127.0.0.1, in a process of its own. PGlite runs its WebAssembly synchronously,
 * so a query blocks the process it runs in: here it blocks nobody but its own attempt.
 *
 * One process serves one attempt and is never handed to another: its data directory lives in
 * the process's memory (PGlite's in-memory file system) and ends with it. It starts either from
 * the pristine snapshot (a data directory dumped right after initdb, before anybody connected:
 * about a third of initdb's time) or, for the first database of a lab server, by
 * running initdb and then writing that snapshot for the others (see EmbeddedStart).
 *
 * Talks to the lab server over IPC (see EmbeddedMessage / EmbeddedCommand in embedded.ts) and
 * exits as soon as the lab server is gone: the IPC channel or stdin closes.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler } from '@electric-sql/pglite-socket';
import { embeddedStartSchema, type EmbeddedCommand, type EmbeddedMessage, type PristineSnapshot } from './embedded.ts';
import { requirePassword } from './wire-auth.ts';
import { ConnectionQueue } from './wire-queue.ts';

/** When each row was committed: the grader's evidence places an effect after the fault before it. */
const COMMIT_TIMESTAMPS = ['track_commit_timestamp = on'];

const send = (message: EmbeddedMessage) => {
  if (process.connected) process.send!(message);
};
const exit = () => process.exit(0);
process.on('disconnect', exit);
process.stdin.on('end', exit).on('close', exit).on('error', exit).resume();

/** This process's CPU time so far (user and system), in ms. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 1000);
};

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/**
 * A PGlite whose data directory nobody has touched: restored from the snapshot, after checking
 * that the file holds exactly the bytes the lab server was told about; or initdb'd, and then
 * dumped (before any connection) as the snapshot of the next ones.
 */
async function pristine(): Promise<{ db: PGlite; made?: PristineSnapshot }> {
  const start = embeddedStartSchema.parse(JSON.parse(process.argv[2] ?? '{}'));
  if (start.snapshot) {
    const bytes = fs.readFileSync(start.snapshot.file);
    if (sha256(bytes) !== start.snapshot.sha256) throw new Error(`the pristine snapshot ${start.snapshot.file} changed since it was made`);
    return { db: await PGlite.create({ relaxedDurability: true, loadDataDir: new Blob([bytes]), postgresqlconf: COMMIT_TIMESTAMPS }) };
  }
  const db = await PGlite.create({ relaxedDurability: true, postgresqlconf: COMMIT_TIMESTAMPS });
  if (!start.makeSnapshot) return { db };
  const bytes = new Uint8Array(await (await db.dumpDataDir('none')).arrayBuffer());
  // 'wx': never over a file somebody else put there.
  fs.writeFileSync(start.makeSnapshot, bytes, { mode: 0o600, flag: 'wx' });
  return { db, made: { file: start.makeSnapshot, sha256: sha256(bytes) } };
}

async function main(): Promise<void> {
  const started = performance.now();
  const { db, made } = await pristine();
  const queue = new ConnectionQueue(db);
  // Made here and told to the lab server over IPC only: the attempt's URL is the one place it goes.
  const password = randomBytes(24).toString('base64url');
  const server = net.createServer((socket) => {
    requirePassword(socket, password, (authenticated) => {
      // pglite-socket frames the protocol; our queue decides who talks to the backend (wire-queue.ts).
      const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true });
      handler.attach(authenticated).catch(() => authenticated.destroy());
    });
  });
  server.maxConnections = 200;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  process.on('message', (command: EmbeddedCommand) => {
    if (command.t === 'stats') send({ t: 'done', id: command.id, ok: true, rssMb: Math.round(process.memoryUsage().rss / 1e6), cpuMs: cpuMs() });
  });
  send({
    t: 'ready',
    port,
    password,
    startMs: Math.round(performance.now() - started),
    rssMb: Math.round(process.memoryUsage().rss / 1e6),
    cpuMs: cpuMs(),
    ...(made ? { snapshot: made } : {}),
  });
}

main().catch((err) => {
  send({ t: 'failed', error: String((err as Error)?.stack ?? err).split('\n').slice(0, 3).join(' ') });
  process.exit(1);
});
