/**
 * Password authentication in front of an embedded PostgreSQL. PGlite trusts whoever connects, and
 * its port is on the machine's loopback: without this, any local process (an unsandboxed
 * program of another attempt, say) could connect to a database that is not its own, including
 * the one the pool started ahead for the next attempt.
 *
 * Each connection's startup is handled here first: SSL and GSSAPI requests are declined, the
 * startup packet is kept, the client is asked for a cleartext password (loopback only), and only
 * the database's own password lets the kept startup through to PGlite (pglite-socket then answers
 * it with AuthenticationOk). Anything else gets a FATAL ErrorResponse and the connection ends.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type net from 'node:net';

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const PROTOCOL_3 = 196608;
/** Larger than any real startup packet or password message: a client cannot make us buffer more. */
const MAX_STARTUP_BYTES = 10_000;
const MAX_PASSWORD_BYTES = 1_024;
/** A connection that has not authenticated by then is closed. */
const AUTH_TIMEOUT_MS = 10_000;

/** AuthenticationCleartextPassword: 'R', length 8, code 3. */
const ASK_PASSWORD = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]);

function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[['S', 'FATAL'], ['V', 'FATAL'], ['C', code], ['M', message]].map(([k, v]) => Buffer.from(`${k}${v}\0`, 'utf8')),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write('E', 0, 'latin1');
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

const digest = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest();

/**
 * Calls `authenticated(socket)` once the client gave `password`, with the startup packet (and
 * whatever followed the password) put back to be read again by the next 'data' listener.
 */
export function requirePassword(socket: net.Socket, password: string, authenticated: (socket: net.Socket) => void): void {
  const expected = digest(password);
  let buffer = Buffer.alloc(0);
  let startup: Buffer | null = null;
  const timer = setTimeout(() => socket.destroy(), AUTH_TIMEOUT_MS);
  const done = () => {
    clearTimeout(timer);
    socket.off('data', onData);
  };
  const refuse = (code: string, message: string) => {
    done();
    socket.end(errorResponse(code, message));
  };
  socket.once('close', () => clearTimeout(timer));
  // A reset mid-handshake: the connection is gone, nothing to answer.
  socket.on('error', () => socket.destroy());

  function onData(chunk: Buffer): void {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      if (!startup) {
        if (buffer.length < 8) return;
        const length = buffer.readInt32BE(0);
        if (length < 8 || length > MAX_STARTUP_BYTES) return refuse('08P01', 'invalid startup packet length');
        if (buffer.length < length) return;
        const code = buffer.readInt32BE(4);
        const packet = Buffer.from(buffer.subarray(0, length));
        buffer = buffer.subarray(length);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          socket.write('N');
          continue;
        }
        // A CancelRequest among them: PGlite cancels nothing.
        if (code !== PROTOCOL_3) return refuse('0A000', 'unsupported frontend protocol or request');
        startup = packet;
        socket.write(ASK_PASSWORD);
        continue;
      }
      if (buffer.length < 5) return;
      const length = buffer.readInt32BE(1);
      if (buffer[0] !== 0x70 || length < 5 || length > MAX_PASSWORD_BYTES) return refuse('28P01', 'password authentication failed');
      if (buffer.length < 1 + length) return;
      const given = buffer.subarray(5, length); // without the terminating zero
      const rest = buffer.subarray(1 + length);
      if (!timingSafeEqual(digest(given), expected)) return refuse('28P01', 'password authentication failed');
      done();
      socket.pause();
      socket.unshift(Buffer.concat([startup, rest]));
      authenticated(socket);
      // Paused explicitly, a socket stays paused when a 'data' listener is added: the next reader's.
      socket.resume();
      return;
    }
  }
  socket.on('data', onData);
}
