/**
 * One embedded PostgreSQL: PGlite (PostgreSQL compiled to WebAssembly) served over the Postgres
 * wire protocol on 127.0.0.1, in a process of its own. PGlite runs its WebAssembly synchronously,
 * so a query blocks the process it runs in: here it blocks nobody but its own attempt.
 *
 * Talks to the lab server over IPC (see EmbeddedMessage / EmbeddedCommand in embedded.ts) and
 * exits as soon as the lab server is gone: the IPC channel or stdin closes.
 */
import net from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler } from '@electric-sql/pglite-socket';
import type { EmbeddedCommand, EmbeddedMessage } from './embedded.ts';
import { ConnectionQueue } from './wire-queue.ts';

const send = (message: EmbeddedMessage) => {
  if (process.connected) process.send!(message);
};
const exit = () => process.exit(0);
process.on('disconnect', exit);
process.stdin.on('end', exit).on('close', exit).on('error', exit).resume();

/** Everything the learner may have created goes; the database is as new for the next attempt. */
const RESET_SQL = `
DO $$ DECLARE s text; BEGIN
  FOR s IN SELECT nspname FROM pg_namespace
            WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
              AND nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%' LOOP
    EXECUTE format('DROP SCHEMA %I CASCADE', s);
  END LOOP;
END $$;
CREATE SCHEMA public;`;

async function main(): Promise<void> {
  const started = performance.now();
  const db = await PGlite.create({ relaxedDurability: true });
  const queue = new ConnectionQueue(db);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // pglite-socket frames the protocol; our queue decides who talks to the backend (wire-queue.ts).
    const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true });
    handler.attach(socket).catch(() => socket.destroy());
  });
  server.maxConnections = 200;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  process.on('message', (command: EmbeddedCommand) => {
    void (async () => {
      try {
        if (command.t === 'reset') {
          // Close every connection first: their transactions roll back, their statements go.
          for (const socket of sockets) socket.destroy();
          const until = Date.now() + 10_000;
          while (sockets.size && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
          await queue.exclusive(async () => {
            if (db.isInTransaction()) await db.exec('ROLLBACK');
            // Session state every connection shared: prepared statements, temp tables, settings, locks.
            await db.exec('DISCARD ALL');
            await db.exec(RESET_SQL);
          });
          send({ t: 'done', id: command.id, ok: true });
        } else if (command.t === 'stats') {
          send({ t: 'done', id: command.id, ok: true, rssMb: Math.round(process.memoryUsage().rss / 1e6) });
        } else if (command.t === 'stop') {
          server.close();
          await db.close().catch(() => {}); // exiting anyway: the process's end frees what close would
          process.exit(0);
        }
      } catch (err) {
        send({ t: 'done', id: command.id ?? 0, ok: false, error: String((err as Error)?.message ?? err) });
      }
    })();
  });
  send({ t: 'ready', port, startMs: Math.round(performance.now() - started), rssMb: Math.round(process.memoryUsage().rss / 1e6) });
}

main().catch((err) => {
  send({ t: 'failed', error: String((err as Error)?.stack ?? err).split('\n').slice(0, 3).join(' ') });
  process.exit(1);
});
