/**
 * JSON API over the attempt store; the session id travels in the X-KafkaIQ-Session header:
 *   GET /api/attempts[?lab=<lab>]  -> { attempts, passedLabs }
 *   GET /api/attempts/<attemptId>  -> the full GradeReport
 *   PUT /api/attempts/display-name  { displayName: string | null } -> 204 (409 taken, 429 too often)
 * The session id is the learner's only credential, so an attempt is only shown to its own session,
 * and it never rides in a URL (URLs land in logs, history and Referer): `?session=` is ignored.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { helloMessageSchema } from '../../src/shared/messages.ts';
import { labIdSchema } from '../../src/shared/lab.ts';
import { displayNameRequestSchema } from '../../src/shared/class-view.ts';
import { describeError } from '../../src/shared/errors.ts';
import { requestUrl } from './perimeter.ts';
import type { AttemptStore } from './attempt-store.ts';
import type { KeyedRate } from './learner-quotas.ts';
import type { ResolveLearner } from './sign-in/learner-identity.ts';
import { readJsonBody, sendJson } from './json-body.ts';

export const ATTEMPTS_API_PREFIX = '/api/attempts';
/** The header that carries the learner's session id (lower case, as Node gives headers). */
export const SESSION_HEADER = 'x-kafkaiq-session';

/** Display-name changes allowed per session and per learner address (learner-quotas.ts). */
export interface NameChangeLimits {
  perSession: KeyedRate;
  perLearner: KeyedRate;
  /** The requesting learner's address. */
  learner: string;
}

/** Who the request is for (sign-in/learner-identity.ts), and whether names come from sign-in. */
export interface RequestIdentity {
  resolveLearner: ResolveLearner;
  /** Sign-in is on: learners are named by the identity provider, never by themselves. */
  namesFromSignIn: boolean;
}
const DISPLAY_NAME_PATH = `${ATTEMPTS_API_PREFIX}/display-name`;
/** A display-name request is a few dozen bytes; anything much larger is not one. */
const MAX_BODY_BYTES = 1024;
const sessionIdSchema = helloMessageSchema.shape.sessionId;

/** Handles the request if it is an attempts API call; returns false to let others handle it. */
export function handleAttemptsApi(req: IncomingMessage, res: ServerResponse, store: AttemptStore, names: NameChangeLimits, identity: RequestIdentity): boolean {
  const url = requestUrl(req);
  if (url.pathname !== ATTEMPTS_API_PREFIX && !url.pathname.startsWith(`${ATTEMPTS_API_PREFIX}/`)) return false;
  const expected = url.pathname === DISPLAY_NAME_PATH ? 'PUT' : 'GET';
  if (req.method !== expected) {
    sendJson(res, 405, { error: `Only ${expected} is supported here` });
    return true;
  }
  const offered = sessionIdSchema.safeParse(req.headers[SESSION_HEADER]);
  if (!offered.success) {
    sendJson(res, 400, { error: 'Give your session id in the X-KafkaIQ-Session header (8-64 letters, digits, _ or -), never in the URL' });
    return true;
  }
  void answer(req, res, url, store, names, identity, offered.data, expected).catch((err: unknown) => {
    if (!res.headersSent) sendJson(res, 500, { error: `Could not read the attempts: ${describeError(err)}` });
  });
  return true;
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  store: AttemptStore,
  names: NameChangeLimits,
  identity: RequestIdentity,
  offered: string,
  expected: 'GET' | 'PUT',
): Promise<void> {
  let session: string;
  try {
    session = await identity.resolveLearner(offered);
  } catch (err) {
    return sendJson(res, 401, { error: describeError(err) });
  }
  if (expected === 'PUT' && identity.namesFromSignIn) {
    return sendJson(res, 403, { error: 'Your name in the class view comes from your sign-in: change it with your identity provider.' });
  }
  if (expected === 'PUT') {
    const wait = Math.max(names.perSession.take(session), names.perLearner.take(names.learner));
    if (wait > 0) {
      res.setHeader('Retry-After', String(wait));
      return sendJson(res, 429, { error: `Display name changed too often: try again in ${wait} s.` });
    }
    return setDisplayName(req, res, store, session);
  }
  if (url.pathname === ATTEMPTS_API_PREFIX) {
    const labParam = url.searchParams.get('lab');
    const lab = labParam === null ? undefined : labIdSchema.safeParse(labParam);
    if (lab && !lab.success) return sendJson(res, 400, { error: 'lab must be a lab id (lower-case letters, digits and dashes)' });
    return sendJson(res, 200, await store.history(session, lab?.data));
  }
  const idText = url.pathname.slice(ATTEMPTS_API_PREFIX.length + 1);
  const attemptId = /^\d{1,15}$/.test(idText) ? Number(idText) : NaN;
  const report = Number.isSafeInteger(attemptId) ? await store.get(session, attemptId) : null;
  if (report === null) sendJson(res, 404, { error: `No attempt ${idText} for this session` });
  else sendJson(res, 200, report);
}

async function setDisplayName(req: IncomingMessage, res: ServerResponse, store: AttemptStore, sessionId: string): Promise<void> {
  try {
    const body = await readJsonBody(req, MAX_BODY_BYTES);
    if (!body.ok && body.status === 413) return sendJson(res, 413, { error: `A display-name request is at most ${MAX_BODY_BYTES} bytes` });
    if (!body.ok) return sendJson(res, 400, { error: 'Send JSON: { "displayName": "Ada" } or { "displayName": null }' });
    const parsed = displayNameRequestSchema.safeParse(body.value);
    if (!parsed.success) return sendJson(res, 400, { error: parsed.error.issues[0]?.message ?? 'invalid display name' });
    if ((await store.setDisplayName(sessionId, parsed.data.displayName)) === 'taken') {
      return sendJson(res, 409, { error: 'Another learner in this class already has that name (or one that looks the same): choose another.' });
    }
    res.writeHead(204, { 'Cache-Control': 'no-store' }).end();
  } catch (err) {
    if (!res.headersSent) sendJson(res, 500, { error: `Could not save the display name: ${describeError(err)}` });
  }
}
