/**
 * Read-only JSON API over the attempt store:
 *   GET /api/attempts?session=<id>[&lab=<lab>]  -> { attempts, passedLabs }
 *   GET /api/attempts/<attemptId>?session=<id>  -> the full GradeReport
 * The session id is the learner's only credential, so an attempt is only shown to its own session.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { helloMessageSchema } from '../../src/shared/messages.ts';
import { labIdSchema } from '../../src/shared/lab.ts';
import type { AttemptStore } from './attempt-store.ts';

export const ATTEMPTS_API_PREFIX = '/api/attempts';
const sessionIdSchema = helloMessageSchema.shape.sessionId;

/** Handles the request if it is an attempts API call; returns false to let others handle it. */
export function handleAttemptsApi(req: IncomingMessage, res: ServerResponse, store: AttemptStore): boolean {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== ATTEMPTS_API_PREFIX && !url.pathname.startsWith(`${ATTEMPTS_API_PREFIX}/`)) return false;
  if (req.method !== 'GET') {
    sendJson(res, 405, { error: 'Only GET is supported here' });
    return true;
  }
  const session = sessionIdSchema.safeParse(url.searchParams.get('session'));
  if (!session.success) {
    sendJson(res, 400, { error: 'Give your session id: ?session=<8-64 letters, digits, _ or ->' });
    return true;
  }
  if (url.pathname === ATTEMPTS_API_PREFIX) {
    const labParam = url.searchParams.get('lab');
    const lab = labParam === null ? undefined : labIdSchema.safeParse(labParam);
    if (lab && !lab.success) {
      sendJson(res, 400, { error: 'lab must be a lab id (lower-case letters, digits and dashes)' });
      return true;
    }
    sendJson(res, 200, store.history(session.data, lab?.data));
    return true;
  }
  const idText = url.pathname.slice(ATTEMPTS_API_PREFIX.length + 1);
  const attemptId = /^\d{1,15}$/.test(idText) ? Number(idText) : NaN;
  const report = Number.isSafeInteger(attemptId) ? store.get(session.data, attemptId) : null;
  if (report === null) sendJson(res, 404, { error: `No attempt ${idText} for this session` });
  else sendJson(res, 200, report);
  return true;
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}
