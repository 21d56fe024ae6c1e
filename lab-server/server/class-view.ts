/**
 * The instructor's class view (pages in class-view-pages.ts, data from the attempt store):
 *   /instructor                 the roster: name, labs passed, attempts, last activity, reference
 *                               solutions shown; sorted, filtered by name or lab, 50 per page
 *   /instructor/learner/<label> one learner's every attempt, with its report and code
 *   /instructor/labs            per lab: learners, attempts, pass rate, median attempts to pass,
 *                               the checks failing most
 *   /instructor/roster.csv, /instructor/labs.csv
 * Off unless the server is started with an instructor token or sign-in names instructors; without
 * a session a request gets 401, a sign-in form and no data.
 *
 * The token travels only at sign-in: posted from the form, or once as a `?token=` link (then
 * redirected away). What the browser keeps is a signed, expiring session cookie that names no
 * secret (instructor-session.ts). Scripts may send `Authorization: Bearer <token>` instead.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { requestUrl } from './perimeter.ts';
import type { AttemptStore } from './attempt-store.ts';
import { MAX_ROSTER_ROWS } from './class-queries.ts';
import { InstructorSessions, readCookie, SESSION_COOKIE } from './instructor-session.ts';
import { CLASS_PATHS, CLASS_VIEW_PATH, escapeHtml, labsCsv, labsPage, learnerPage, rosterCsv, rosterPage, rosterQueryOf } from './class-view-pages.ts';

export { CLASS_VIEW_PATH, ROSTER_PAGE_SIZE } from './class-view-pages.ts';
const SIGN_OUT_PATH = CLASS_PATHS.signOut;
export const INSTRUCTOR_TOKEN_ENV = 'KAFKAIQ_INSTRUCTOR_TOKEN';
const MIN_TOKEN_CHARS = 16;
/** A sign-in form body is the token and a few bytes of encoding. */
const MAX_FORM_BYTES = 2048;

export interface ClassViewContext {
  store: AttemptStore;
  /** undefined: the class view is off (unless sign-in names instructors). */
  sessions: InstructorSessions | undefined;
  /** With sign-in on: whether the request's signed-in account is an instructor (null: sign-in is off). */
  instructorSignedIn: ((req: IncomingMessage) => boolean) | null;
  /** Whether this request came over TLS (Secure cookies then). */
  secure: (req: IncomingMessage) => boolean;
}

/** The token from the environment, checked; undefined when the class view is off. */
export function instructorTokenFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const token = env[INSTRUCTOR_TOKEN_ENV];
  if (token === undefined || token === '') return undefined;
  if (token.length < MIN_TOKEN_CHARS || !/^[\x21-\x7e]+$/.test(token)) {
    throw new KafkaIqError(
      'INVALID_INPUT',
      `${INSTRUCTOR_TOKEN_ENV} must be at least ${MIN_TOKEN_CHARS} printable characters without spaces: generate one with 'openssl rand -hex 24'.`,
    );
  }
  return token;
}

/** Handles the request if it is for the class view; returns false to let others handle it. */
export function handleClassView(req: IncomingMessage, res: ServerResponse, context: ClassViewContext): boolean {
  const url = requestUrl(req);
  const signOut = url.pathname === SIGN_OUT_PATH;
  if (url.pathname !== CLASS_VIEW_PATH && !url.pathname.startsWith(`${CLASS_VIEW_PATH}/`)) return false;
  const { sessions, instructorSignedIn } = context;
  if (instructorSignedIn?.(req) && !signOut) {
    renderPage(req, res, context, url);
    return true;
  }
  if (sessions === undefined) {
    if (instructorSignedIn) {
      sendPage(res, 401, 'Instructor sign-in', `<p><a href="/auth/login?returnTo=${CLASS_VIEW_PATH}">Sign in</a> with an instructor's account to see the class.</p>`);
      return true;
    }
    sendPage(res, 404, 'Class view off', `<p>Start the lab server with ${INSTRUCTOR_TOKEN_ENV}=&lt;a secret&gt; to turn on the class view.</p>`);
    return true;
  }
  const cookie = { path: CLASS_VIEW_PATH, secure: context.secure(req) };
  if (signOut) {
    if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
    res.writeHead(303, { Location: CLASS_VIEW_PATH, 'Set-Cookie': InstructorSessions.clearCookie(cookie), 'Cache-Control': 'no-store' }).end();
    return true;
  }
  if (req.method === 'POST') {
    void readForm(req).then(
      (form) => signIn(res, sessions, form?.get('token') ?? null, cookie),
      () => res.headersSent || refuse(res, 'The sign-in form could not be read: try again.'),
    );
    return true;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res, 'GET, HEAD, POST');
  const offered = url.searchParams.get('token');
  if (offered !== null) {
    signIn(res, sessions, offered, cookie);
    return true;
  }
  const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
  const signedIn = bearer !== undefined ? sessions.tokenMatches(bearer) : sessions.valid(readCookie(req.headers.cookie, SESSION_COOKIE));
  if (!signedIn) {
    refuse(res);
    return true;
  }
  renderPage(req, res, context, url);
  return true;
}

function renderPage(_req: IncomingMessage, res: ServerResponse, context: ClassViewContext, url: URL): void {
  void classPage(res, context.store, url).catch((err: unknown) => {
    if (!res.headersSent) sendPage(res, 500, 'Class view', `<p>The class could not be read: ${escapeHtml(describeError(err))}</p>`);
  });
}

async function classPage(res: ServerResponse, store: AttemptStore, url: URL): Promise<void> {
  const path = url.pathname.replace(/\/+$/, '') || CLASS_VIEW_PATH;
  if (path === CLASS_VIEW_PATH) {
    const query = rosterQueryOf(url);
    const [roster, labs] = await Promise.all([store.classRoster(query), store.gradedLabs()]);
    return sendPage(res, 200, 'Class view', rosterPage(roster, query, labs));
  }
  if (path === CLASS_PATHS.labs) return sendPage(res, 200, 'Class view: labs', labsPage(await store.classLabs()));
  if (path === CLASS_PATHS.rosterCsv) return sendCsv(res, 'roster.csv', rosterCsv((await store.classRoster({ offset: 0, limit: MAX_ROSTER_ROWS })).learners));
  if (path === CLASS_PATHS.labsCsv) return sendCsv(res, 'labs.csv', labsCsv(await store.classLabs()));
  const label = path.startsWith(CLASS_PATHS.learner) ? path.slice(CLASS_PATHS.learner.length) : null;
  const learner = label !== null && /^[0-9a-f]{12}$/.test(label) ? await store.classLearner(`learner ${label}`) : null;
  if (learner) return sendPage(res, 200, 'Class view: learner', learnerPage(learner));
  sendPage(res, 404, 'Not found', `<p>Nothing here: <a href="${CLASS_VIEW_PATH}">back to the class</a>.</p>`);
}

function sendCsv(res: ServerResponse, name: string, body: string): void {
  res.writeHead(200, { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="${name}"`, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
  res.end(body);
}

/** A correct token becomes a signed session cookie and a redirect to a URL without the token. */
function signIn(res: ServerResponse, sessions: InstructorSessions, offered: string | null, cookie: { path: string; secure: boolean }): void {
  if (offered === null || !sessions.tokenMatches(offered)) {
    refuse(res, 'That token is not this server\'s instructor token.');
    return;
  }
  res.writeHead(303, { Location: CLASS_VIEW_PATH, 'Set-Cookie': sessions.cookie(sessions.issue(), cookie), 'Cache-Control': 'no-store' });
  res.end();
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  if (!/^application\/x-www-form-urlencoded\b/.test(req.headers['content-type'] ?? '')) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return null;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function methodNotAllowed(res: ServerResponse, allow: string): true {
  res.setHeader('Allow', allow);
  sendPage(res, 405, 'Method not allowed', `<p>Use ${allow} here.</p>`);
  return true;
}

function refuse(res: ServerResponse, why = ''): true {
  sendPage(
    res,
    401,
    'Instructor sign-in',
    `${why ? `<p>${escapeHtml(why)}</p>` : ''}<form method="post" action="${CLASS_VIEW_PATH}"><label>Instructor token <input type="password" name="token" autocomplete="current-password" required></label> <button type="submit">Sign in</button></form>`,
  );
  return true;
}

function sendPage(res: ServerResponse, status: number, title: string, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  });
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} | KafkaIQ</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;max-width:80rem}table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ccc;padding:.4rem;text-align:left;vertical-align:top}pre{font-size:12px;white-space:pre-wrap;background:#f6f6f6;padding:.5rem}nav.top{display:flex;gap:.5rem;align-items:center;flex-wrap:wrap}nav.top form{margin-left:auto}.filters{display:flex;gap:1rem;flex-wrap:wrap;align-items:end;margin:1rem 0}section{border-top:1px solid #ddd;margin-top:1rem}h3{font-size:1rem}small{color:#666}.kiq-report-pass{color:#1c7a35}.kiq-report-fail{color:#b3261e}.kiq-report-warn{color:#8a6100}.kiq-report-dim{color:#666}.kiq-report-strong{font-weight:bold}</style>
</head><body><main><h1>${title}</h1>${body}</main></body></html>`);
}
