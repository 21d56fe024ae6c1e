/**
 * The instructor's class view: GET /instructor lists every learner (by the display name they
 * chose, else an anonymous label), the labs they passed, their number of attempts and the last
 * report of each lab, read from the attempt store. Off unless the server is started with an
 * instructor token; without that token a request gets 401 and no data.
 *
 * The token travels once, as `?token=` (the page then sets an HttpOnly cookie and redirects to a
 * URL without it, so it stays out of history and logs) or as `Authorization: Bearer <token>`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { htmlPaint, renderReport } from '../../src/shared/format-report.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import type { AttemptStore, LearnerSummary } from './attempt-store.ts';

export const CLASS_VIEW_PATH = '/instructor';
export const INSTRUCTOR_TOKEN_ENV = 'KAFKAIQ_INSTRUCTOR_TOKEN';
const COOKIE = 'kafkaiq_instructor';
const MIN_TOKEN_CHARS = 16;

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
export function handleClassView(req: IncomingMessage, res: ServerResponse, store: AttemptStore, token: string | undefined): boolean {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== CLASS_VIEW_PATH && url.pathname !== `${CLASS_VIEW_PATH}/`) return false;
  if (token === undefined) {
    sendPage(res, 404, 'Class view off', `<p>Start the lab server with ${INSTRUCTOR_TOKEN_ENV}=&lt;a secret&gt; to turn on the class view.</p>`);
    return true;
  }
  const offered = url.searchParams.get('token');
  if (offered !== null) {
    if (!sameSecret(offered, token)) {
      refuse(res);
      return true;
    }
    res.writeHead(303, {
      Location: CLASS_VIEW_PATH,
      'Set-Cookie': `${COOKIE}=${encodeURIComponent(offered)}; HttpOnly; SameSite=Strict; Path=${CLASS_VIEW_PATH}`,
      'Cache-Control': 'no-store',
    });
    res.end();
    return true;
  }
  if (!sameSecret(presentedToken(req) ?? '', token)) {
    refuse(res);
    return true;
  }
  sendPage(res, 200, 'Class view', renderRoster(store.classRoster()));
  return true;
}

function presentedToken(req: IncomingMessage): string | undefined {
  const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (bearer) return bearer;
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** Constant-time comparison of two secrets of any length (compares their digests). */
function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

function refuse(res: ServerResponse): void {
  sendPage(res, 401, 'Instructor token needed', `<p>Open <code>${CLASS_VIEW_PATH}?token=&lt;your token&gt;</code> once; the browser then keeps it for this page.</p>`);
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function renderRoster(learners: LearnerSummary[]): string {
  if (learners.length === 0) return '<p>No learner has graded a lab yet.</p>';
  const rows = learners.map((learner) => {
    const name = learner.displayName ? `${escapeHtml(learner.displayName)} <small>(${learner.label})</small>` : escapeHtml(learner.label);
    const passed = learner.passedLabs.length ? learner.passedLabs.map(escapeHtml).join(', ') : '<em>none yet</em>';
    const reports = learner.latest
      .map(
        ({ lab, at, report }) =>
          `<details><summary>${escapeHtml(lab)}: ${report.verdict.toUpperCase()}${report.quick ? ' (quick)' : ''} <small>${escapeHtml(at)}</small></summary><pre>${renderReport(report, htmlPaint).join('\n')}</pre></details>`,
      )
      .join('');
    return `<tr><td>${name}</td><td>${passed}</td><td>${learner.attempts}</td><td>${reports}</td></tr>`;
  });
  return `<p>${learners.length} learner${learners.length === 1 ? '' : 's'}. Passed means a passing full grade.</p>
<table><thead><tr><th>Learner</th><th>Labs passed</th><th>Attempts</th><th>Last report per lab</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function sendPage(res: ServerResponse, status: number, title: string, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'",
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} | KafkaIQ</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;max-width:80rem}table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ccc;padding:.4rem;text-align:left;vertical-align:top}pre{font-size:12px;white-space:pre-wrap;background:#f6f6f6;padding:.5rem}small{color:#666}.kiq-report-pass{color:#1c7a35}.kiq-report-fail{color:#b3261e}.kiq-report-warn{color:#8a6100}.kiq-report-dim{color:#666}.kiq-report-strong{font-weight:bold}</style>
</head><body><h1>${title}</h1>${body}</body></html>`);
}
