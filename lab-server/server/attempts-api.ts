/**
 * JSON API over the attempt store:
 *   GET /api/attempts?session=<id>[&lab=<lab>]  -> { attempts, passedLabs }
 *   GET /api/attempts/<attemptId>?session=<id>  -> the full GradeReport
 *   PUT /api/attempts/display-name?session=<id>  { displayName: string | null } -> 204
 * The session id is the learner's only credential, so an attempt is only shown to its own session.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { helloMessageSchema } from '../../src/shared/messages.ts';
import { labIdSchema } from '../../src/shared/lab.ts';
import { displayNameRequestSchema } from '../../src/shared/class-view.ts';
import { describeError } from '../../src/shared/errors.ts';
import type { AttemptStore } from './attempt-store.ts';

export const ATTEMPTS_API_PREFIX = '/api/attempts';
const DISPLAY_NAME_PATH = `${ATTEMPTS_API_PREFIX}/display-name`;
/** A display-name request is a few dozen bytes; anything much larger is not one. */
const MAX_BODY_BYTES = 1024;
const sessionIdSchema = helloMessageSchema.shape.sessionId;

/** Handles the request if it is an attempts API call; returns false to let others handle it. */
export function handleAttemptsApi(req: IncomingMessage, res: ServerResponse, store: AttemptStore): boolean {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== ATTEMPTS_API_PREFIX && !url.pathname.startsWith(`${ATTEMPTS_API_PREFIX}/`)) return false;
  const expected = url.pathname === DISPLAY_NAME_PATH ? 'PUT' : 'GET';
  if (req.method !== expected) {
    sendJson(res, 405, { error: `Only ${expected} is supported here` });
    return true;
  }
  const session = sessionIdSchema.safeParse(url.searchParams.get('session'));
  if (!session.success) {
    sendJson(res, 400, { error: 'Give your session id: ?session=<8-64 letters, digits, _ or ->' });
    return true;
  }
  if (expected === 'PUT') {
    void setDisplayName(req, res, store, session.data);
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

async function setDisplayName(req: IncomingMessage, res: ServerResponse, store: AttemptStore, sessionId: string): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) return sendJson(res, 413, { error: `A display-name request is at most ${MAX_BODY_BYTES} bytes` });
      chunks.push(chunk);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return sendJson(res, 400, { error: 'Send JSON: { "displayName": "Ada" } or { "displayName": null }' });
    }
    const parsed = displayNameRequestSchema.safeParse(body);
    if (!parsed.success) return sendJson(res, 400, { error: parsed.error.issues[0]?.message ?? 'invalid display name' });
    store.setDisplayName(sessionId, parsed.data.displayName);
    res.writeHead(204, { 'Cache-Control': 'no-store' }).end();
  } catch (err) {
    if (!res.headersSent) sendJson(res, 500, { error: `Could not save the display name: ${describeError(err)}` });
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}
