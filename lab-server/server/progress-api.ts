/**
 * PUT /api/progress { lessons } (X-KafkaIQ-Session, like the attempts API): the browser tells the
 * lab server the learner's lesson progress (src/shared/progress.ts), kept for their instructor's
 * class view. Parsed against its schema, bounded in size and rate; it grades nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { helloMessageSchema } from '../../src/shared/messages.ts';
import { describeError } from '../../src/shared/errors.ts';
import { MAX_PROGRESS_BYTES, PROGRESS_PATH, progressReportSchema } from '../../src/shared/progress.ts';
import { SESSION_HEADER, type RequestIdentity } from './attempts-api.ts';
import type { AttemptStore } from './attempt-store.ts';
import type { KeyedRate } from './learner-quotas.ts';
import { requestUrl } from './perimeter.ts';
import { readJsonBody, sendJson } from './json-body.ts';

const sessionIdSchema = helloMessageSchema.shape.sessionId;

/** Handles the request if it is a progress report; returns false to let others handle it. */
export function handleProgressApi(req: IncomingMessage, res: ServerResponse, store: AttemptStore, identity: RequestIdentity, rate: KeyedRate): boolean {
  if (requestUrl(req).pathname !== PROGRESS_PATH) return false;
  if (req.method !== 'PUT') {
    sendJson(res, 405, { error: 'Only PUT is supported here' });
    return true;
  }
  const offered = sessionIdSchema.safeParse(req.headers[SESSION_HEADER]);
  if (!offered.success) {
    sendJson(res, 400, { error: 'Give your session id in the X-KafkaIQ-Session header (8-64 letters, digits, _ or -)' });
    return true;
  }
  const wait = rate.take(offered.data);
  if (wait > 0) {
    res.setHeader('Retry-After', String(wait));
    sendJson(res, 429, { error: `Progress reported too often: try again in ${wait} s.` });
    return true;
  }
  void save(req, res, store, identity, offered.data).catch((err: unknown) => {
    if (!res.headersSent) sendJson(res, 500, { error: `Could not save the progress: ${describeError(err)}` });
  });
  return true;
}

async function save(req: IncomingMessage, res: ServerResponse, store: AttemptStore, identity: RequestIdentity, offered: string): Promise<void> {
  const body = await readJsonBody(req, MAX_PROGRESS_BYTES);
  if (!body.ok && body.status === 413) return sendJson(res, 413, { error: `A progress report is at most ${MAX_PROGRESS_BYTES / 1024} KB` });
  if (!body.ok) return sendJson(res, 400, { error: 'Send JSON: { "lessons": { "10-1/<lesson>": { ... } } }' });
  const report = progressReportSchema.safeParse(body.value);
  if (!report.success) return sendJson(res, 400, { error: `Not a progress report: ${report.error.issues[0]?.message ?? 'invalid'}` });
  let learner: string;
  try {
    learner = await identity.resolveLearner(offered);
  } catch (err) {
    return sendJson(res, 401, { error: describeError(err) });
  }
  await store.saveProgress(learner, report.data);
  res.writeHead(204, { 'Cache-Control': 'no-store' }).end();
}
