/**
 * Sign-in with OpenID Connect (lab-server/server/sign-in/) against a real provider: oidc-provider
 * run as its own process with a key this test made for it, its development login page driven
 * like a browser would (redirects followed, cookies kept per host). Between the lab server and the
 * provider sits an interceptor that can replace the ID token in the token answer, as an attacker
 * on the path would: with one signed by another key (forged) or by the provider's own key but
 * expired. The lab server is the real one; only program sessions are a test double.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { accountStatusSchema } from '../../src/shared/account.ts';
import { PROTOCOL_VERSION } from '../../src/shared/messages.ts';
import { openAttemptStore, type AttemptStore } from '../../lab-server/server/attempt-store.ts';
import { createLabServer, type LabServer } from '../../lab-server/server/lab-server.ts';
import { oidcConfigFromEnv } from '../../lab-server/server/sign-in/oidc-config.ts';
import { OidcSignIn } from '../../lab-server/server/sign-in/oidc.ts';
import { fakeReport, fakeSessionFactory } from '../support/fake-lab-session.ts';

const CLIENT_ID = 'kafkaiq-course';
const CLIENT_SECRET = 'course-client-secret-0123456789';
const DOMAIN = 'example.edu';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-sign-in-'));
const { privateKey: providerKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const { privateKey: otherKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

let provider: ChildProcess | null = null;
let providerPort = 0;
let serverPort = 0;
let store: AttemptStore;
let server: LabServer;
let wrongIssuer: OidcSignIn;
const serverLog: string[] = [];
/** What the interceptor does to the next token answer's ID token. */
let tamper: ((idToken: string) => string) | null = null;

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function startProvider(): Promise<void> {
  const keyFile = path.join(tmp, 'provider-key.pem');
  fs.writeFileSync(keyFile, providerKey.export({ format: 'pem', type: 'pkcs8' }));
  const script = path.join(import.meta.dirname, '../support/oidc-provider.mjs');
  const child = spawn(process.execPath, [script, String(providerPort), CLIENT_ID, CLIENT_SECRET, `http://127.0.0.1:${serverPort}/auth/callback`, DOMAIN, keyFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  provider = child;
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready ')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the provider exited (${code}) before it listened: ${out}`)));
  });
}

async function stopProvider(): Promise<void> {
  const child = provider;
  provider = null;
  if (!child || child.exitCode !== null) return;
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
}

/** The lab server's way to the provider: the real one, with the token answer rewritten when `tamper` says so. */
const interceptor: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (!tamper || !url.endsWith('/token')) return response;
  const body = (await response.json()) as { id_token: string };
  const rewritten = { ...body, id_token: tamper(body.id_token) };
  tamper = null;
  return new Response(JSON.stringify(rewritten), { status: response.status, headers: { 'Content-Type': 'application/json' } });
};

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
function resign(idToken: string, key: KeyObject, change: (claims: Record<string, unknown>) => Record<string, unknown>): string {
  const [header, payload] = idToken.split('.') as [string, string];
  const claims = change(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>);
  const body = `${b64(JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as object)}.${b64(claims)}`;
  return `${body}.${createSign('RSA-SHA256').update(body).sign(key).toString('base64url')}`;
}

/** A browser as far as sign-in needs one: redirects followed by hand, cookies kept per host. */
class Browser {
  private readonly jar = new Map<string, Map<string, string>>();
  /** The last sign-in cookie and callback URL seen, for the replay test. */
  callback: { url: string; cookie: string } | null = null;

  async go(url: string, init: RequestInit = {}): Promise<{ response: Response; url: string; body: string }> {
    let current = url;
    let request = init;
    for (let hop = 0; hop < 15; hop++) {
      const host = new URL(current).host;
      const cookies = [...(this.jar.get(host) ?? new Map())].map(([k, v]) => `${k}=${v}`).join('; ');
      if (current.includes('/auth/callback')) this.callback = { url: current, cookie: cookies };
      const response = await fetch(current, { ...request, redirect: 'manual', headers: { ...(request.headers as Record<string, string>), ...(cookies ? { Cookie: cookies } : {}) } });
      for (const line of response.headers.getSetCookie()) this.keep(host, line);
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        current = new URL(location, current).href;
        request = {};
        continue;
      }
      return { response, url: current, body: await response.text() };
    }
    throw new Error(`too many redirects from ${url}`);
  }

  cookieHeader(host: string): string {
    return [...(this.jar.get(host) ?? new Map())].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(host: string, line: string): void {
    const [pair, ...attributes] = line.split(';');
    const eq = pair!.indexOf('=');
    const [name, value] = [pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim()];
    const cookies = this.jar.get(host) ?? new Map<string, string>();
    this.jar.set(host, cookies);
    if (attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '') cookies.delete(name);
    else cookies.set(name, value);
  }
}

const site = () => `http://127.0.0.1:${serverPort}`;

/** Signs in as `user` through the provider's login page; returns the page the browser lands on. */
async function signIn(browser: Browser, user: string, returnTo = '/lessons/') {
  const login = await browser.go(`${site()}/auth/login?returnTo=${encodeURIComponent(returnTo)}`);
  if (login.response.status !== 200 || !login.url.includes('/interaction/')) return login;
  const action = /<form[^>]*action="([^"]+)"/.exec(login.body)?.[1];
  expect(action, login.body.slice(0, 500)).toBeTruthy();
  // The form's hidden fields (which prompt this answers), then the user's name and any password.
  const hidden = [...login.body.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)].map(([, name, value]) => [name!, value!]);
  return browser.go(new URL(action!, login.url).href, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams([...hidden, ['login', user], ['password', 'any']]).toString(),
  });
}

async function me(browser: Browser) {
  const response = await fetch(`${site()}/auth/me`, { headers: { Cookie: browser.cookieHeader(`127.0.0.1:${serverPort}`) } });
  return accountStatusSchema.parse(await response.json());
}

function attempts(browser: Browser, session: string) {
  return fetch(`${site()}/api/attempts`, { headers: { Cookie: browser.cookieHeader(`127.0.0.1:${serverPort}`), 'X-KafkaIQ-Session': session } });
}

/** The session id the lab server's welcome names, after a hello with `offered` from this browser. */
function welcomedAs(browser: Browser, offered: string): Promise<string> {
  const ws = new WebSocket(`ws://127.0.0.1:${serverPort}/ws`, { headers: { Origin: site(), Cookie: browser.cookieHeader(`127.0.0.1:${serverPort}`) } });
  return new Promise((resolve, reject) => {
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: PROTOCOL_VERSION, sessionId: offered })));
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; sessionId?: string };
      if (message.type !== 'welcome') return;
      ws.close();
      resolve(message.sessionId!);
    });
    ws.on('error', reject);
  });
}

beforeAll(async () => {
  [providerPort, serverPort] = [await freePort(), await freePort()];
  await startProvider();
  fs.mkdirSync(path.join(tmp, 'site'));
  store = openAttemptStore({ file: path.join(tmp, 'attempts.sqlite') });
  const env = {
    KAFKAIQ_OIDC_ISSUER: `http://127.0.0.1:${providerPort}`,
    KAFKAIQ_OIDC_CLIENT_ID: CLIENT_ID,
    KAFKAIQ_OIDC_CLIENT_SECRET: CLIENT_SECRET,
    KAFKAIQ_OIDC_ALLOWED_EMAIL_DOMAIN: DOMAIN,
    KAFKAIQ_OIDC_INSTRUCTOR_GROUP: 'instructors',
  };
  const config = oidcConfigFromEnv(env, site())!;
  const log = (line: string) => void serverLog.push(line);
  const signInHandler = new OidcSignIn(config, 'a-session-secret-for-these-tests-0123456789', store, log, interceptor);
  wrongIssuer = new OidcSignIn({ ...config, issuer: `http://localhost:${providerPort}` }, 'a-session-secret-for-these-tests-0123456789', store, log);
  server = await createLabServer({
    port: serverPort,
    staticDir: path.join(tmp, 'site'),
    createSession: fakeSessionFactory().createSession,
    store,
    cluster: { brokers: 'localhost:9092', brokerFaults: false },
    signIn: signInHandler,
    log,
  });
}, 30_000);

afterAll(async () => {
  await stopProvider();
  await server?.close();
  await store?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('sign-in with OpenID Connect', () => {
  it('signs a learner in at the provider; their anonymous work joins the account and follows it to another browser', async () => {
    const first = new Browser();
    const anonymous = 'anon-browser-one-0001';
    await store.save(anonymous, fakeReport('single-stage', { verdict: 'fail' }));
    expect(await me(first)).toEqual({ signInEnabled: true, account: null });
    const landed = await signIn(first, 'ada-lovelace');
    expect(landed.url).toBe(`${site()}/lessons/`);
    expect(await me(first)).toEqual({ signInEnabled: true, account: { name: 'Ada Lovelace', email: `ada-lovelace@${DOMAIN}`, instructor: false } });
    // The first request that carries both the anonymous id and the account moves the work over.
    const mine = (await (await attempts(first, anonymous)).json()) as { attempts: unknown[] };
    expect(mine.attempts).toHaveLength(1);
    // Another browser, another anonymous id, the same account: the same history.
    const second = new Browser();
    await signIn(second, 'ada-lovelace');
    const there = (await (await attempts(second, 'anon-browser-two-0002')).json()) as { attempts: unknown[] };
    expect(there.attempts).toHaveLength(1);
    // The anonymous id alone now holds nothing, and the account's own id is worth nothing without its cookie.
    const alone = (await (await fetch(`${site()}/api/attempts`, { headers: { 'X-KafkaIQ-Session': anonymous } })).json()) as { attempts: unknown[] };
    expect(alone.attempts).toHaveLength(0);
    const accountId = (await store.classRoster({ offset: 0, limit: 10 })).learners.find((l) => l.displayName === 'Ada Lovelace');
    expect(accountId).toBeDefined();
    // The workbench's WebSocket is the account's too: its hello's anonymous id is replaced.
    expect(await welcomedAs(first, 'anon-browser-three-0004')).toMatch(/^acct_[A-Za-z0-9_-]{40}$/);
    expect(await welcomedAs(new Browser(), 'anon-browser-three-0004')).toBe('anon-browser-three-0004');
    // Names come from the provider: a self-chosen one is refused.
    const rename = await fetch(`${site()}/api/attempts/display-name`, {
      method: 'PUT',
      body: JSON.stringify({ displayName: 'Someone Else' }),
      headers: { 'Content-Type': 'application/json', 'X-KafkaIQ-Session': anonymous, Cookie: first.cookieHeader(`127.0.0.1:${serverPort}`) },
    });
    expect(rename.status).toBe(403);
  });

  it("opens the class view to an instructor's account only", async () => {
    const teacher = new Browser();
    await signIn(teacher, 'teacher-grace', '/instructor');
    const view = await teacher.go(`${site()}/instructor`);
    expect(view.response.status).toBe(200);
    expect(view.body).toContain('Ada Lovelace');
    const learner = new Browser();
    await signIn(learner, 'alan-turing');
    const refused = await learner.go(`${site()}/instructor`);
    expect(refused.response.status).toBe(401);
    expect(refused.body).not.toContain('Ada Lovelace');
  });

  it('refuses a replayed sign-in answer', async () => {
    const browser = new Browser();
    await signIn(browser, 'replay-user');
    expect((await me(browser)).account?.name).toBe('Replay User');
    const { url, cookie } = browser.callback!;
    const replay = await fetch(url, { headers: { Cookie: cookie }, redirect: 'manual' });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain('expired or was already used');
  });

  it('refuses an ID token signed by another key, and one the provider signed that has expired', async () => {
    tamper = (token) => resign(token, otherKey, (claims) => ({ ...claims, sub: 'someone-else' }));
    const forged = await signIn(new Browser(), 'mallory');
    expect(forged.response.status).toBe(401);
    expect(forged.body).toContain('could not be accepted');
    tamper = (token) => resign(token, providerKey, (claims) => ({ ...claims, iat: Math.floor(Date.now() / 1000) - 3_600, exp: Math.floor(Date.now() / 1000) - 600 }));
    const browser = new Browser();
    const expired = await signIn(browser, 'late-learner');
    expect(expired.response.status).toBe(401);
    expect((await me(browser)).account).toBeNull();
    // The same key with fresh times is accepted: the refusals above were for the signature and the expiry.
    tamper = (token) => resign(token, providerKey, (claims) => claims);
    const resigned = new Browser();
    await signIn(resigned, 'honest-learner');
    expect((await me(resigned)).account?.name).toBe('Honest Learner');
  });

  it('refuses a provider whose issuer is not the one configured, with one line naming the setting', async () => {
    const line = await wrongIssuer.probe();
    expect(line).toMatch(/^Sign-in: the provider at KAFKAIQ_OIDC_ISSUER=http:\/\/localhost:\d+ cannot be used \(.*issuer/i);
  });

  it('signs out: the cookie is cleared and the account is out of reach', async () => {
    const browser = new Browser();
    await signIn(browser, 'leaving-learner');
    expect((await me(browser)).account).not.toBeNull();
    const out = await browser.go(`${site()}/auth/logout`, { method: 'POST' });
    expect(out.url).toBe(`${site()}/`);
    expect((await me(browser)).account).toBeNull();
    const tampered = await fetch(`${site()}/auth/me`, { headers: { Cookie: 'kafkaiq_account=v1.e30.not-a-signature' } });
    expect(accountStatusSchema.parse(await tampered.json()).account).toBeNull();
  });

  it('keeps signed-in learners working while the provider is down, and tells a new sign-in why it cannot', async () => {
    const browser = new Browser();
    await signIn(browser, 'steady-learner');
    await stopProvider();
    try {
      expect((await me(browser)).account?.name).toBe('Steady Learner');
      expect((await attempts(browser, 'anon-steady-0003')).status).toBe(200);
      const refused = await new Browser().go(`${site()}/auth/login`);
      expect(refused.response.status).toBe(503);
      expect(refused.body).toContain('The sign-in provider cannot be used right now');
      expect(serverLog.some((l) => l.includes('cannot be used'))).toBe(true);
    } finally {
      await startProvider();
    }
    await sleep(100);
    const back = new Browser();
    await signIn(back, 'after-outage');
    expect((await me(back)).account?.name).toBe('After Outage');
  });
});
