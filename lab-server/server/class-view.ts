/**
 * The instructor's class view: GET /instructor lists the learners with at least one grade (by the
 * display name they chose, else an anonymous label), the labs they passed, their number of
 * attempts, the labs whose reference solution they were shown (and whether before their pass)
 * and the last report of each lab, 50 per page (`?page=`), read from the attempt store.
 * Off unless the server is started with an instructor token; without a session a request gets
 * 401, a sign-in form and no data.
 *
 * The token travels only at sign-in: posted from the form, or once as a `?token=` link (then
 * redirected away). What the browser keeps is a signed, expiring session cookie that names no
 * secret (instructor-session.ts). Scripts may send `Authorization: Bearer <token>` instead.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { htmlPaint, renderReport } from '../../src/shared/format-report.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { requestUrl } from './perimeter.ts';
import type { AttemptStore, RosterPage } from './attempt-store.ts';
import { InstructorSessions, readCookie, SESSION_COOKIE } from './instructor-session.ts';

export const CLASS_VIEW_PATH = '/instructor';
const SIGN_OUT_PATH = `${CLASS_VIEW_PATH}/sign-out`;
export const INSTRUCTOR_TOKEN_ENV = 'KAFKAIQ_INSTRUCTOR_TOKEN';
const MIN_TOKEN_CHARS = 16;
/** Learners per page of the class view. */
export const ROSTER_PAGE_SIZE = 50;
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
  if (url.pathname !== CLASS_VIEW_PATH && url.pathname !== `${CLASS_VIEW_PATH}/` && !signOut) return false;
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
  const requested = /^\d{1,6}$/.test(url.searchParams.get('page') ?? '') ? Number(url.searchParams.get('page')) : 1;
  const page = Math.max(1, requested);
  const roster = context.store.classRoster({ offset: (page - 1) * ROSTER_PAGE_SIZE, limit: ROSTER_PAGE_SIZE });
  sendPage(res, 200, 'Class view', renderRoster(roster, page));
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

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function renderRoster({ learners, total }: RosterPage, page: number): string {
  const pages = Math.max(1, Math.ceil(total / ROSTER_PAGE_SIZE));
  const signOut = `<form method="post" action="${SIGN_OUT_PATH}"><button type="submit">Sign out</button></form>`;
  if (total === 0) return `<p>No learner has graded a lab yet.</p>${signOut}`;
  if (learners.length === 0) return `<p>Page ${page} is past the last page (${pages}): <a href="${CLASS_VIEW_PATH}?page=${pages}">go to page ${pages}</a>.</p>${signOut}`;
  const rows = learners.map((learner) => {
    const name = learner.displayName ? `${escapeHtml(learner.displayName)} <small>(${learner.label})</small>` : escapeHtml(learner.label);
    const passed = learner.passedLabs.length ? learner.passedLabs.map(escapeHtml).join(', ') : '<em>none yet</em>';
    const reports = learner.latest
      .map(
        ({ lab, at, report }) =>
          `<details><summary>${escapeHtml(lab)}: ${report.verdict.toUpperCase()}${report.quick ? ' (quick)' : ''} <small>${escapeHtml(at)}</small></summary><pre>${renderReport(report, htmlPaint).join('\n')}</pre></details>`,
      )
      .join('');
    // One line per lab whose reference solution the learner was shown: the first reveal tells whether it came before their pass.
    const firstReveal = new Map<string, (typeof learner.reveals)[number]>();
    for (const reveal of learner.reveals) firstReveal.set(reveal.lab, reveal); // newest first: the last one set is the first reveal
    const reveals = [...firstReveal.values()]
      .map((r) => `${escapeHtml(r.lab)}: ${r.beforePass ? '<strong>before passing</strong>' : 'after passing'} <small>${escapeHtml(r.at)}</small>`)
      .join('<br>');
    return `<tr><td>${name}</td><td>${passed}</td><td>${learner.attempts}</td><td>${reveals || '<em>none</em>'}</td><td>${reports}</td></tr>`;
  });
  const link = (n: number, text: string) => `<a href="${CLASS_VIEW_PATH}?page=${n}">${text}</a>`;
  const nav = `<nav>Page ${page} of ${pages}${page > 1 ? ` · ${link(page - 1, 'previous')}` : ''}${page < pages ? ` · ${link(page + 1, 'next')}` : ''}</nav>`;
  const first = (page - 1) * ROSTER_PAGE_SIZE + 1;
  return `<p>${total} learner${total === 1 ? '' : 's'} with a grade (${first}-${first + learners.length - 1} here). Passed means a passing full grade.</p>${nav}
<table><thead><tr><th>Learner</th><th>Labs passed</th><th>Attempts</th><th>Reference solution shown</th><th>Last report per lab</th></tr></thead><tbody>${rows.join('')}</tbody></table>${nav}${signOut}`;
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
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;max-width:80rem}table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ccc;padding:.4rem;text-align:left;vertical-align:top}pre{font-size:12px;white-space:pre-wrap;background:#f6f6f6;padding:.5rem}small{color:#666}.kiq-report-pass{color:#1c7a35}.kiq-report-fail{color:#b3261e}.kiq-report-warn{color:#8a6100}.kiq-report-dim{color:#666}.kiq-report-strong{font-weight:bold}</style>
</head><body><h1>${title}</h1>${body}</body></html>`);
}
