import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listTransactions } from '../../lab-server/kafka/transactions.ts';

/**
 * A broker between two lives: it accepts a connection, reads the client's first request (the
 * SASL handshake), and drops the connection. @platformatic/kafka's Connection then emits 'error'
 * twice (the dropped socket, then the handshake that failed with it); an EventEmitter without an
 * 'error' listener throws the second one out of the event loop, which would take a lab server
 * down with every grade on it.
 */
function droppingBroker(): Promise<{ server: Server; address: string }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, address: `127.0.0.1:${(server.address() as { port: number }).port}` })));
}

describe('a transactions listing against a broker that drops its connections', () => {
  let server: Server | null = null;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('fails with the one-line error and throws nothing out of the event loop', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => void uncaught.push(err);
    // Vitest's own listener would fail the run: this test counts what escapes instead.
    const theirs = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', onUncaught);
    try {
      const broker = await droppingBroker();
      server = broker.server;
      const listing = listTransactions([broker.address], 'attempt-x');
      await expect(listing).rejects.toMatchObject({ code: 'BROKER_UNREACHABLE' });
      // Errors emitted after the request failed arrive on later turns of the loop.
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      process.off('uncaughtException', onUncaught);
      for (const listener of theirs) process.on('uncaughtException', listener);
    }
    expect(uncaught.map(String)).toEqual([]);
  }, 30_000);
});
