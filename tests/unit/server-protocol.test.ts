/**
 * The lab server's transport layer: WebSocket protocol, static files and the attempt store.
 * Sessions are a test double (tests/support/fake-lab-session.ts): these tests are about the
 * protocol, not about running programs.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openAttemptStore, type AttemptStore } from '../../lab-server/server/attempt-store.ts';
import { CLOSE_SESSION_TAKEN_OVER, createLabServer, MESSAGE_TOO_BIG_REASON, type LabServer } from '../../lab-server/server/lab-server.ts';
import { serverMessageSchema, type ServerMessage } from '../../src/shared/messages.ts';
import { fakeReport, fakeSessionFactory } from '../support/fake-lab-session.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-server-'));
const siteDir = path.join(tmp, 'site');
const dbFile = path.join(tmp, 'state', 'attempts.sqlite');
const factory = fakeSessionFactory();
let store: AttemptStore;
let server: LabServer;

function writeSite() {
  const files: Record<string, string> = {
    'index.html': '<!doctype html><title>home</title>',
    '404.html': '<!doctype html><title>not found</title>',
    '10-1/lesson/index.html': '<!doctype html><title>lesson</title>',
    '_astro/app.abc123.js': 'console.log("hashed");'.repeat(100),
    'styles.css': 'body{}',
  };
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(siteDir, name)), { recursive: true });
    fs.writeFileSync(path.join(siteDir, name), text);
  }
  // Next to the site, where a traversal would find it.
  fs.writeFileSync(path.join(tmp, 'package.json'), '{"secret":true}');
}

async function startServer() {
  store = openAttemptStore({ file: dbFile });
  server = await createLabServer({
    port: 0,
    staticDir: siteDir,
    createSession: factory.createSession,
    store,
    cluster: { brokers: 'localhost:9092', brokerFaults: true },
    log: () => {},
  });
}

async function stopServer() {
  await server.close();
  await store.close();
}

beforeAll(async () => {
  writeSite();
  await startServer();
});

afterAll(async () => {
  await stopServer();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A WebSocket client that queues every (validated) server message for `next()`. */
class TestClient {
  readonly ws: WebSocket;
  private queue: ServerMessage[] = [];
  private waiters: Array<() => void> = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(url: string, headers: Record<string, string> = {}) {
    this.ws = new WebSocket(url, { headers });
    this.ws.on('message', (data) => {
      this.queue.push(serverMessageSchema.parse(JSON.parse(String(data))));
      this.waiters.splice(0).forEach((wake) => wake());
    });
    this.closed = new Promise((resolve) => this.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  static async connect(sessionId?: string): Promise<TestClient> {
    // A browser's Origin: the server refuses a WebSocket without one (admission.ts).
    const client = new TestClient(`ws://127.0.0.1:${server.port}/ws`, { Origin: `http://127.0.0.1:${server.port}` });
    await new Promise<void>((resolve, reject) => {
      client.ws.once('open', () => resolve());
      client.ws.once('error', reject);
    });
    if (sessionId) {
      client.send({ type: 'hello', protocol: 1, sessionId });
      await client.next('welcome');
    }
    return client;
  }

  send(message: unknown) {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  async next<T extends ServerMessage['type']>(type: T, timeoutMs = 5_000): Promise<Extract<ServerMessage, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.queue.findIndex((m) => m.type === type);
      if (index >= 0) return this.queue.splice(index, 1)[0] as Extract<ServerMessage, { type: T }>;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no "${type}" message within ${timeoutMs} ms; got ${this.queue.map((m) => m.type).join(', ') || 'nothing'}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close() {
    this.ws.close();
    return this.closed;
  }
}

let sessionCounter = 0;
const newSessionId = () => `test-session-${process.pid}-${++sessionCounter}`;

describe('WebSocket protocol', () => {
  it('answers hello with welcome and the cluster facts', async () => {
    const client = await TestClient.connect();
    const sessionId = newSessionId();
    client.send({ type: 'hello', protocol: 1, sessionId });
    const welcome = await client.next('welcome');
    expect(welcome).toEqual({ type: 'welcome', protocol: 1, sessionId, brokers: 'localhost:9092', brokerFaults: true, broker: 'up', unsandboxed: null });
    await client.close();
  });

  it('rejects invalid JSON with an error and keeps the connection open', async () => {
    const client = await TestClient.connect(newSessionId());
    client.send('{"type": "run",');
    const error = await client.next('error');
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toMatch(/not valid JSON/);
    expect(error.message).not.toContain('\n');
    // Still usable afterwards.
    client.send({ type: 'history' });
    await client.next('history');
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    await client.close();
  });

  it('names the bad field of an unknown message type', async () => {
    const client = await TestClient.connect(newSessionId());
    client.send({ type: 'launch-missiles' });
    const error = await client.next('error');
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toMatch(/^Invalid message: type: /);
    await client.close();
  });

  it('refuses a program over 256 KB with a message that says so', async () => {
    const client = await TestClient.connect(newSessionId());
    client.send({ type: 'run', lab: 'single-stage', code: 'x'.repeat(256 * 1024 + 1) });
    const error = await client.next('error');
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('code');
    expect(error.message).toContain('256 KB');
    await client.close();
  });

  it('closes a message over 400 KB with a readable reason', async () => {
    const client = await TestClient.connect(newSessionId());
    client.send({ type: 'run', lab: 'single-stage', code: 'x'.repeat(500 * 1024) });
    const closed = await client.closed;
    expect(closed.code).toBe(1009);
    expect(closed.reason).toBe(MESSAGE_TOO_BIG_REASON);
  });

  it('requires hello before anything else', async () => {
    const client = await TestClient.connect();
    client.send({ type: 'run', lab: 'single-stage', code: 'console.log(1)' });
    const error = await client.next('error');
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toMatch(/hello first/);
    await client.close();
  });

  it('answers a second run while one is active with BUSY, and runs again after stop', async () => {
    const client = await TestClient.connect(newSessionId());
    client.send({ type: 'run', lab: 'single-stage', code: 'console.log(1)' });
    expect((await client.next('state')).activity).toBe('running');
    client.send({ type: 'run', lab: 'single-stage', code: 'console.log(2)' });
    const busy = await client.next('error');
    expect(busy.code).toBe('BUSY');
    client.send({ type: 'grade', lab: 'single-stage', code: 'console.log(2)' });
    expect((await client.next('error')).code).toBe('BUSY');
    client.send({ type: 'stop' });
    expect((await client.next('state')).activity).toBe('idle');
    client.send({ type: 'run', lab: 'single-stage', code: 'console.log(3)' });
    expect((await client.next('state')).activity).toBe('running');
    await client.close();
  });

  it('passes the session error code through (unknown lab)', async () => {
    const client = await TestClient.connect(newSessionId());
    client.send({ type: 'run', lab: 'no-such-lab', code: '' });
    const error = await client.next('error');
    expect(error.code).toBe('LAB_NOT_FOUND');
    expect(error.message).toContain('no-such-lab');
    await client.close();
  });

  it('grades, saves the attempt and sends the report and the history', async () => {
    const sessionId = newSessionId();
    const client = await TestClient.connect(sessionId);
    client.send({ type: 'grade', lab: 'single-stage', code: 'x', seed: 7 });
    expect((await client.next('progress')).phase).toBe('running');
    const { report } = await client.next('report');
    expect(report.seed).toBe(7);
    const history = await client.next('history');
    expect(history.passedLabs).toEqual(['single-stage']);
    expect(history.attempts[0]).toMatchObject({ lab: 'single-stage', verdict: 'pass', seed: 7, quick: false });
    await client.close();
  });

  it('disposes the session when the socket closes', async () => {
    const sessionId = newSessionId();
    const client = await TestClient.connect(sessionId);
    await client.close();
    await expect.poll(() => factory.sessions.find((s) => s.sessionId === sessionId)?.disposed).toBe(true);
  });

  it('hands a session over to the newest tab', async () => {
    const sessionId = newSessionId();
    const first = await TestClient.connect(sessionId);
    const second = await TestClient.connect(sessionId);
    expect((await first.closed).code).toBe(CLOSE_SESSION_TAKEN_OVER);
    second.send({ type: 'history' });
    await second.next('history');
    await second.close();
  });

  it('refuses a WebSocket from another web site', async () => {
    const client = new TestClient(`ws://127.0.0.1:${server.port}/ws`, { Origin: 'https://evil.example' });
    const failure = await new Promise<string>((resolve) => client.ws.once('error', (err) => resolve(err.message)));
    expect(failure).toMatch(/403/);
  });
});

function get(pathname: string, headers: Record<string, string> = {}) {
  // http.request sends the path verbatim, unlike fetch(), which would normalise `/../`.
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, path: pathname, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('static site', () => {
  it('serves index.html for folders with the right content type', async () => {
    const home = await get('/');
    expect(home.status).toBe(200);
    expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(home.body).toContain('home');
    expect((await get('/10-1/lesson/')).body).toContain('lesson');
  });

  it('redirects a folder without its trailing slash', async () => {
    const res = await get('/10-1/lesson?x=1');
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe('/10-1/lesson/?x=1');
  });

  it('caches hashed assets for good and gzips text', async () => {
    const asset = await get('/_astro/app.abc123.js', { 'Accept-Encoding': 'gzip' });
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(asset.headers['cache-control']).toContain('immutable');
    expect(asset.headers['content-encoding']).toBe('gzip');
    expect((await get('/styles.css')).headers['cache-control']).toBe('no-cache');
  });

  it('answers unknown paths with the 404 page', async () => {
    const res = await get('/no/such/page/');
    expect(res.status).toBe(404);
    expect(res.body).toContain('not found');
  });

  it('never serves files outside the site folder', async () => {
    for (const attempt of ['/../package.json', '/%2e%2e/package.json', '/10-1/../../package.json', '/..%2fpackage.json', '/%5c..%5cpackage.json']) {
      const res = await get(attempt);
      expect([400, 404], attempt).toContain(res.status);
      expect(res.body, attempt).not.toContain('secret');
    }
  });
});

describe('attempt store', () => {
  it('round-trips a report and keeps the history across a server restart', async () => {
    const sessionId = newSessionId();
    const report = fakeReport('fan-out', { verdict: 'fail', seed: 99, quick: true });
    const id = await store.save(sessionId, report);
    await store.save(sessionId, fakeReport('single-stage', { quick: true }));
    expect(await store.get(sessionId, id)).toEqual(report);
    expect(await store.get('someone-else-123', id)).toBeNull();

    await stopServer();
    await startServer();

    const history = await store.history(sessionId);
    expect(history.attempts.map((a) => a.lab)).toEqual(['single-stage', 'fan-out']);
    expect(history.attempts[1]).toMatchObject({ id, verdict: 'fail', seed: 99, quick: true, durationMs: 4321 });
    // A quick pass is a smoke test: it does not complete the lab.
    expect(history.passedLabs).toEqual([]);
    expect((await store.history(sessionId, 'fan-out')).attempts).toHaveLength(1);

    // The session id travels in a header; one in the query string is ignored.
    const as = (id: string) => ({ 'X-KafkaIQ-Session': id });
    const api = await get('/api/attempts', as(sessionId));
    expect(api.status).toBe(200);
    expect(JSON.parse(api.body).attempts).toHaveLength(2);
    const one = await get(`/api/attempts/${id}`, as(sessionId));
    expect(JSON.parse(one.body)).toEqual(report);
    expect((await get(`/api/attempts/${id}`, as('someone-else-123'))).status).toBe(404);
    expect((await get('/api/attempts')).status).toBe(400);
    const inUrl = await get(`/api/attempts?session=${sessionId}`);
    expect(inUrl.status).toBe(400);
    expect(inUrl.body).not.toContain('fan-out');
  });
});
