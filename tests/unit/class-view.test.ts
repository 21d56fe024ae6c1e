/**
 * The instructor's class view (/instructor): refused without the instructor token, and with it a
 * list of learners read from the attempt store, by the display name they chose or an anonymous
 * label, with their passed labs, attempt counts and last reports. Sessions are a test double
 * (the view reads the store, not programs).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAttemptStore, type AttemptStore } from '../../lab-server/server/attempt-store.ts';
import { instructorTokenFromEnv } from '../../lab-server/server/class-view.ts';
import { createLabServer, type LabServer } from '../../lab-server/server/lab-server.ts';
import { fakeReport, fakeSessionFactory } from '../support/fake-lab-session.ts';

const TOKEN = 'class-view-test-token-0123456789';
const ADA = 'session-ada-0001';
const ANON = 'session-anon-0002';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-class-'));
let store: AttemptStore;
let server: LabServer;

beforeAll(async () => {
  fs.mkdirSync(path.join(tmp, 'site'));
  store = openAttemptStore({ file: path.join(tmp, 'attempts.sqlite') });
  await store.save(ADA, fakeReport('single-stage', { verdict: 'fail', message: 'no-duplicates failed', checks: [{ name: 'no-duplicates', passed: false, summary: '3 duplicates', evidence: [] }] }));
  await store.save(ADA, fakeReport('single-stage'));
  await store.save(ADA, fakeReport('copy', { quick: true }), 'export default async function ada() {}');
  await store.save(ANON, fakeReport('zombie', { verdict: 'fail' }));
  server = await createLabServer({
    port: 0,
    staticDir: path.join(tmp, 'site'),
    createSession: fakeSessionFactory().createSession,
    store,
    cluster: { brokers: 'localhost:9092', brokerFaults: false },
    instructorToken: TOKEN,
    log: () => {},
  });
});

afterAll(async () => {
  await server.close();
  await store.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const get = (pathname: string, headers: Record<string, string> = {}) => fetch(`${server.url}${pathname}`, { headers, redirect: 'manual' });

describe('the class view', () => {
  it('learners set (and clear) a display name through the attempts API, validated', async () => {
    const put = (body: string) => fetch(`${server.url}/api/attempts/display-name`, { method: 'PUT', body, headers: { 'Content-Type': 'application/json', 'X-KafkaIQ-Session': ADA } });
    expect((await put(JSON.stringify({ displayName: '<script>' }))).status).toBe(400);
    expect((await put('x'.repeat(5_000))).status).toBe(413);
    expect((await put(JSON.stringify({ displayName: 'Ada L.' }))).status).toBe(204);
    expect((await fetch(`${server.url}/api/attempts/display-name`, { headers: { 'X-KafkaIQ-Session': ADA } })).status).toBe(405);
  });

  it('refuses without the token, or with a wrong one, and shows no learner', async () => {
    for (const response of [await get('/instructor'), await get('/instructor', { Authorization: 'Bearer wrong-token-wrong-token' }), await get('/instructor?token=nope')]) {
      expect(response.status).toBe(401);
      const body = await response.text();
      expect(body).not.toContain('Ada');
      expect(body).not.toContain('single-stage');
    }
  });

  it('lists each learner with passed labs, attempts and last activity, never a session id', async () => {
    const response = await get('/instructor', { Authorization: `Bearer ${TOKEN}` });
    expect(response.status).toBe(200);
    const html = await response.text();
    const adaRow = html.split('<tr>').find((row) => row.includes('Ada L.'))!;
    expect(adaRow).toBeDefined();
    // single-stage passed in a full grade; copy passed only a quick grade, which is not a pass.
    expect(adaRow).toMatch(/<td>single-stage<\/td><td>3<\/td><td>0<\/td><td>\d{4}-\d\d-\d\dT/);
    const anonRow = html.split('<tr>').find((row) => !row.includes('Ada L.') && row.includes('learner '))!;
    expect(anonRow).toMatch(/>learner [0-9a-f]{12}<\/a><\/td><td><em>none yet<\/em><\/td><td>1<\/td><td>0<\/td>/);
    expect(html).not.toContain(ADA);
    expect(html).not.toContain(ANON);
  });

  it("shows one learner's every attempt with its report and code, by the roster's link", async () => {
    const html = await (await get('/instructor', { Authorization: `Bearer ${TOKEN}` })).text();
    const link = /href="(\/instructor\/learner\/[0-9a-f]{12})">Ada L\./.exec(html)?.[1];
    expect(link).toBeDefined();
    const page = await (await get(link!, { Authorization: `Bearer ${TOKEN}` })).text();
    expect(page.match(/<section>/g)).toHaveLength(3);
    expect(page).toContain('copy: PASS (quick)');
    expect(page).toContain('single-stage: FAIL');
    expect(page).toContain('export default async function ada()');
    expect((await get('/instructor/learner/000000000000', { Authorization: `Bearer ${TOKEN}` })).status).toBe(404);
    expect((await get(link!)).status).toBe(401);
  });

  it('sorts and filters the roster, and shows per-lab figures', async () => {
    const byName = await (await get('/instructor?name=ada', { Authorization: `Bearer ${TOKEN}` })).text();
    expect(byName).toContain('Ada L.');
    expect(byName).toContain('1 learner with a grade (1-1 here)');
    const byLab = await (await get('/instructor?lab=zombie', { Authorization: `Bearer ${TOKEN}` })).text();
    expect(byLab).not.toContain('Ada L.');
    expect(byLab).toContain('1 learner with a grade (1-1 here)');
    const mostAttempts = await (await get('/instructor?sort=attempts', { Authorization: `Bearer ${TOKEN}` })).text();
    expect(mostAttempts.indexOf('Ada L.')).toBeLessThan(mostAttempts.indexOf('<td><em>none yet</em></td><td>1</td>'));
    const labs = await (await get('/instructor/labs', { Authorization: `Bearer ${TOKEN}` })).text();
    // single-stage: Ada failed once (no-duplicates), then passed: 1 learner, 2 attempts, 100%, 2 attempts to pass.
    expect(labs).toMatch(/<td>single-stage<\/td><td><a [^>]+>1<\/a><\/td><td>2<\/td><td>1 \(100%\)<\/td><td>2<\/td><td>no-duplicates \(1\)<\/td>/);
    expect(labs).toMatch(/<td>zombie<\/td><td><a [^>]+>1<\/a><\/td><td>1<\/td><td>0 \(0%\)<\/td><td>–<\/td>/);
  });

  it('exports the roster and the labs as CSV, a formula-like name made inert', async () => {
    await store.save('session-formula-0003', fakeReport('copy'));
    await store.setDisplayName('session-formula-0003', '=HYPERLINK("x")');
    const roster = await get('/instructor/roster.csv', { Authorization: `Bearer ${TOKEN}` });
    expect(roster.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await roster.text();
    expect(text.split('\r\n')[0]).toBe('"learner","display name","attempts","labs passed","lessons complete","last activity","reference solutions shown before passing"');
    expect(text).toContain('"\'=HYPERLINK(""x"")"');
    expect(text).toMatch(/"Ada L\.","3","single-stage","\d+"/);
    const labs = await (await get('/instructor/labs.csv', { Authorization: `Bearer ${TOKEN}` })).text();
    expect(labs).toContain('"single-stage","1","2","1","1.000","2","no-duplicates:1"');
    expect((await get('/instructor/labs.csv')).status).toBe(401);
  });

  it('turns a ?token= link into an HttpOnly cookie and a URL without the token', async () => {
    const login = await get(`/instructor?token=${TOKEN}`);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/instructor');
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const page = await get('/instructor', { Cookie: cookie.split(';')[0]! });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Ada L.');
  });

  it('is off without a token, and a short token is refused in one line', async () => {
    expect(instructorTokenFromEnv({})).toBeUndefined();
    expect(() => instructorTokenFromEnv({ KAFKAIQ_INSTRUCTOR_TOKEN: 'short' })).toThrow(/at least 16 printable characters.*openssl rand -hex 24/);
  });

  it("keeps the lesson progress a learner's browser reports, refuses a malformed report, and shows it", async () => {
    const put = (body: string, session = ADA) => fetch(`${server.url}/api/progress`, { method: 'PUT', body, headers: { 'Content-Type': 'application/json', 'X-KafkaIQ-Session': session } });
    const lesson = { opened: true, answered: 3, right: 2, checks: 3, labsPassed: 1, labs: 1, complete: true };
    expect((await put(JSON.stringify({ lessons: { '10-1/04-single-stage': lesson, '10-1/05-multi-stage': { ...lesson, complete: false, labsPassed: 0 } } }))).status).toBe(204);
    expect((await put(JSON.stringify({ lessons: { '../etc': lesson } }))).status).toBe(400);
    expect((await put(JSON.stringify({ lessons: { '10-1/x': { ...lesson, extra: 1 } } }))).status).toBe(400);
    expect((await put('{' + ' '.repeat(40_000))).status).toBe(413);
    expect((await fetch(`${server.url}/api/progress`, { headers: { 'X-KafkaIQ-Session': ADA } })).status).toBe(405);
    const html = await (await get('/instructor', { Authorization: `Bearer ${TOKEN}` })).text();
    expect(html.split('<tr>').find((row) => row.includes('Ada L.'))).toMatch(/<td>single-stage<\/td><td>3<\/td><td>1<\/td>/);
    const link = /href="(\/instructor\/learner\/[0-9a-f]{12})">Ada L\./.exec(html)![1]!;
    const page = await (await get(link, { Authorization: `Bearer ${TOKEN}` })).text();
    expect(page).toContain('1 of 2 complete');
    expect(page).toMatch(/<td>04-single-stage<\/td><td>yes<\/td><td>2\/3 right \(3 answered\)<\/td><td>1\/1<\/td><td><strong>complete<\/strong><\/td>/);
  });
});
