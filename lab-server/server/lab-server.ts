/**
 * The one process a learner talks to: a Node http server that serves the built course site,
 * the attempts API and the `/ws` WebSocket of the lab workbench.
 */
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { describeError } from '../../src/shared/errors.ts';
import type { AttemptStore } from './attempt-store.ts';
import { handleAttemptsApi } from './attempts-api.ts';
import { handleProgressApi } from './progress-api.ts';
import { handleClassView } from './class-view.ts';
import { ConnectionsPerIp, defaultLimits, GradeQueue, MessageRate, clientIp, type AdmissionLimits } from './admission.ts';
import { InstructorSessions } from './instructor-session.ts';
import { LabConnection, type ClusterInfo, type CreateSession } from './lab-connection.ts';
import { KeyedRate, LearnerQuotas } from './learner-quotas.ts';
import { Perimeter } from './perimeter.ts';
import { createStaticHandler } from './static-files.ts';
import { SIGN_IN_PATHS, type AccountStatus } from '../../src/shared/account.ts';
import type { OidcSignIn } from './sign-in/oidc.ts';
import { ServerGrades } from './grades-in-flight.ts';
import { learnerResolver, type ResolveLearner } from './sign-in/learner-identity.ts';

export type { ClusterInfo, CreateSession } from './lab-connection.ts';
export { CLOSE_SESSION_TAKEN_OVER } from './lab-connection.ts';

export const WS_PATH = '/ws';
/** The largest client message (a 256 KB program is well below it, even JSON-escaped). */
export const MAX_MESSAGE_BYTES = 400 * 1024;
/** Close code and reason for a message over MAX_MESSAGE_BYTES (1009 = "message too big"). */
export const CLOSE_MESSAGE_TOO_BIG = 1009;
export const MESSAGE_TOO_BIG_REASON = `Message larger than ${MAX_MESSAGE_BYTES / 1024} KB (programs are limited to 256 KB)`;
/**
 * `ws` itself refuses frames above this and closes with 1009 but no reason; below it, our own
 * check closes with a reason a person can read.
 */
const TRANSPORT_MAX_PAYLOAD = 4 * MAX_MESSAGE_BYTES;
/** A socket that has not said hello by then is closed: idle sockets would hold a learner's connection slots. */
export const HELLO_DEADLINE_MS = 10_000;

export interface LabServerOptions {
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** The built site (dist/). */
  staticDir: string;
  createSession: CreateSession;
  store: AttemptStore;
  cluster: ClusterInfo;
  log?: (line: string) => void;
  /** Ping interval; a client that has not answered the previous ping is dropped. */
  keepaliveMs?: number;
  /**
   * Origins the course is served under besides the server's loopback ones (KAFKAIQ_ORIGINS, the
   * Astro dev server's): the Host allow-list and the Origin check both use them (perimeter.ts).
   */
  allowedOrigins?: string[];
  /** Trust X-Forwarded-Proto and -For from a proxy the operator runs (KAFKAIQ_TRUST_PROXY=1). */
  trustProxy?: boolean;
  /** Turns on the instructor's class view at /instructor (see class-view.ts). */
  instructorToken?: string;
  /** Accept a WebSocket without Origin (a non-browser client); off by default. */
  allowMissingOrigin?: boolean;
  /** Connections per IP, messages per connection, concurrent grades (admission.ts). */
  limits?: AdmissionLimits;
  /** Sign-in with the class's OpenID Provider (sign-in/oidc.ts); anonymous only without it. */
  signIn?: OidcSignIn;
}

export interface LabServer {
  readonly port: number;
  /** http://host:port */
  readonly url: string;
  /** Allows more origins (e.g. the dev server's, once it listens). */
  allowOrigins(origins: readonly string[]): void;
  /** Closes every session (their runs stop) and the server. */
  close(): Promise<void>;
}

export async function createLabServer(options: LabServerOptions): Promise<LabServer> {
  const log = options.log ?? ((line: string) => console.log(`[lab-server] ${line}`));
  const serveStatic = createStaticHandler(options.staticDir);
  const connections = new Set<LabConnection>();
  const bySession = new Map<string, LabConnection>();
  const limits = options.limits ?? defaultLimits();
  const perIp = new ConnectionsPerIp(limits.connectionsPerIp);
  const grades = new GradeQueue(limits.concurrentGrades, limits.gradeQueue);
  const quotas = new LearnerQuotas({ runs: limits.runsPerLearner, grades: limits.gradesPerLearner });
  // A name is chosen once or twice: a few changes in a row, then one every 30 s per learner.
  const nameChanges = { perSession: new KeyedRate(5, 2), perLearner: new KeyedRate(20, 10) };
  // Progress is reported when a lesson page opens or a check is answered: a course's worth of pages
  // in a row (a learner clicking through the sidebar), then 2 a second.
  const progressReports = new KeyedRate(120, 120);
  const sessions = options.instructorToken === undefined ? undefined : new InstructorSessions(options.instructorToken);
  const signIn = options.signIn;
  const inFlight = new ServerGrades(options.store, log);
  // Known once the server listens (its port is part of its origins); nothing is served before.
  let perimeter!: Perimeter;

  const server = http.createServer((req, res) => {
    try {
      if (!perimeter.admit(req, res)) return;
      if (signIn ? signIn.handle(req, res, perimeter.secure(req)) : answerSignInOff(req, res)) return;
      // The account cookie is opened only by a request that names a learner, never for a static file.
      const identity = { resolveLearner: (offered: string) => learnerResolver(signIn?.account(req) ?? null, options.store)(offered), namesFromSignIn: signIn !== undefined };
      if (handleAttemptsApi(req, res, options.store, { ...nameChanges, learner: clientIp(req) }, identity)) return;
      if (handleProgressApi(req, res, options.store, identity, progressReports)) return;
      const instructorSignedIn = signIn ? (r: IncomingMessage) => signIn.account(r)?.instructor === true : null;
      if (handleClassView(req, res, { store: options.store, sessions, instructorSignedIn, secure: (r) => perimeter.secure(r) })) return;
    } catch (err) {
      log(`attempts API failed: ${describeError(err)}`);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: 'Could not read the attempts' }));
      return;
    }
    serveStatic(req, res).catch((err) => {
      log(`static file failed: ${describeError(err)}`);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('Server error\n');
    });
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: TRANSPORT_MAX_PAYLOAD });
  server.on('upgrade', (req, socket: Duplex, head) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (!perimeter.hostAllowed(req)) return rejectUpgrade(socket, 421, 'Misdirected Request');
    if (path !== WS_PATH) return rejectUpgrade(socket, 404, 'Not Found');
    if (!perimeter.originAllowed(req, options.allowMissingOrigin ?? false)) return rejectUpgrade(socket, 403, 'Forbidden');
    const ip = clientIp(req);
    if (!perIp.admit(ip)) return rejectUpgrade(socket, 429, 'Too Many Requests');
    socket.once('close', () => perIp.release(ip));
    const resolveLearner = learnerResolver(signIn?.account(req) ?? null, options.store);
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, ip, resolveLearner));
  });

  function accept(ws: WebSocket, learner: string, resolveLearner: ResolveLearner) {
    const connection = new LabConnection(ws, {
      createSession: options.createSession,
      store: options.store,
      cluster: options.cluster,
      grades,
      rate: new MessageRate(limits.messagesPerSecond, limits.messageBurst),
      quotas,
      learner,
      resolveLearner,
      inFlight,
      log,
      claimSession(sessionId, claimer) {
        const previous = bySession.get(sessionId);
        bySession.set(sessionId, claimer);
        return previous === claimer ? undefined : previous;
      },
      releaseSession(sessionId, releaser) {
        if (bySession.get(sessionId) === releaser) bySession.delete(sessionId);
      },
    });
    connections.add(connection);
    const helloDeadline = setTimeout(() => {
      if (!connection.greeted) ws.close(1008, `No hello within ${HELLO_DEADLINE_MS / 1000} s`);
    }, HELLO_DEADLINE_MS);
    helloDeadline.unref();
    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.on('message', (data, isBinary) => {
      const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data instanceof ArrayBuffer ? data.byteLength : data.length;
      if (size > MAX_MESSAGE_BYTES) {
        ws.close(CLOSE_MESSAGE_TOO_BIG, MESSAGE_TOO_BIG_REASON);
        return;
      }
      void connection.receive(data, isBinary);
    });
    // Transport errors (e.g. a frame over TRANSPORT_MAX_PAYLOAD) close the socket; 'close' cleans up.
    ws.on('error', (err) => log(`websocket error: ${describeError(err)}`));
    ws.on('close', () => {
      clearTimeout(helloDeadline);
      connections.delete(connection);
      void connection.dispose();
    });
  }

  const unsubscribeHealth = options.cluster.health?.subscribe((state, detail) => {
    log(`broker ${state}${detail ? `: ${detail}` : ''}`);
    for (const connection of connections) connection.brokerState(state, detail);
  });

  // Browsers that vanish (sleep, network change) never send a close frame; pings find them.
  const keepalive = setInterval(() => {
    for (const connection of connections) {
      if (!connection.alive) {
        connection.socket.terminate();
        continue;
      }
      connection.alive = false;
      connection.socket.ping();
    }
  }, options.keepaliveMs ?? 15_000);
  keepalive.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  perimeter = new Perimeter({ port: address.port, bindHost: address.address, origins: options.allowedOrigins, trustProxy: options.trustProxy });

  return {
    port: address.port,
    url: `http://${hostForUrl}:${address.port}`,
    allowOrigins: (origins) => perimeter.allow(origins),
    async close() {
      clearInterval(keepalive);
      unsubscribeHealth?.();
      const all = [...connections];
      for (const connection of all) connection.socket.close(1001, 'Lab server is shutting down');
      await Promise.all(all.map((connection) => connection.dispose()));
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Without sign-in, the browser still asks whether there is one. */
function answerSignInOff(req: IncomingMessage, res: http.ServerResponse): boolean {
  if ((req.url ?? '').split('?', 1)[0] !== SIGN_IN_PATHS.me) return false;
  const status: AccountStatus = { signInEnabled: false, account: null };
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }).end(JSON.stringify(status));
  return true;
}

function rejectUpgrade(socket: Duplex, status: number, text: string) {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
