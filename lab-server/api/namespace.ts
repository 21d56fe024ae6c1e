/**
 * One attempt's namespace of the lab HTTP API: its effects, idempotency keys and the fault the
 * grader armed (see lab-api.ts for how the service behaves).
 */
import type http from 'node:http';
import type { ApiCall, ApiEffect, ApiFaultArm, ApiFaultHit, ApiFaultKind, ApiService, CallOutcome } from './contract.ts';
import { canonical } from './contract.ts';
import { ENDPOINTS, HttpError, parseBody, send, type Reply } from './http.ts';
import { SagaParticipants, type StepResult } from './saga-service.ts';
import { idempotencyKeySchema, paymentRequestSchema, rankingPutSchema, rankingRequestSchema } from './schemas.ts';
import { DEFAULT_API_STATE_LIMITS, describeApiStateLimits, type ApiStateLimits } from '../../src/shared/api-limits.ts';

/** A call's path as kept for evidence: the request line can be kilobytes long. */
const MAX_CALL_PATH_CHARS = 512;

/**
 * Which calls a fault can hit: api-error any call to an endpoint with a valid body (it stands for a
 * gateway or an overloaded backend answering before any work), api-slow any call that gets a real
 * answer (new work or a replay), api-timeout only a call that applies a NEW effect.
 */
const FAULT_STAGE: Record<ApiFaultKind, 'received' | 'processing' | 'applying'> = {
  'api-error': 'received',
  'api-slow': 'processing',
  'api-timeout': 'applying',
};

interface KeyRecord {
  fingerprint: string;
  state: 'in-progress' | 'done';
  status?: number;
  text?: string;
}

interface ArmedFault extends ApiFaultArm {
  report: (hit: ApiFaultHit | null) => void;
  reported: boolean;
}


const rankingId = (campaignId: string, start: string | number, end: string | number) => `${campaignId}|${start}|${end}`;

/** The effects, keys and armed fault of one attempt. */
export class ApiNamespace {
  readonly effects: ApiEffect[] = [];
  readonly calls: ApiCall[] = [];
  private readonly keys = new Map<string, KeyRecord>();
  private readonly rankings = new Map<string, { campaignId: string; windowStart: string | number; windowEnd: string | number; count: number }>();
  private readonly saga = new SagaParticipants();
  private armed: ArmedFault | null = null;
  private closed = false;
  /** Pending delays and held answers, released when the namespace closes. */
  private readonly waiters = new Set<() => void>();
  private seq = 0;
  private callSeq = 0;
  /** UTF-8 bytes of the effects and stored keys (with their answers) held: bounded by limits.maxBytes. */
  private stateBytes = 0;
  /** Requests refused because the namespace was full (429). */
  refusedOverBound = 0;

  constructor(
    readonly name: string,
    readonly baseUrl: string,
    private readonly onClose: (ns: ApiNamespace) => void,
    readonly limits: ApiStateLimits = DEFAULT_API_STATE_LIMITS,
  ) {}

  /** What the namespace holds, against its bounds (tests, the report's note). */
  get usage(): { effects: number; keys: number; bytes: number } {
    return { effects: this.effects.length, keys: this.keys.size, bytes: this.stateBytes };
  }

  /**
   * Arms a fault (replacing any armed one). Resolves with the first call it hit, or null when it
   * is disarmed, replaced or the namespace closes before any call came.
   */
  arm(fault: ApiFaultArm): Promise<ApiFaultHit | null> {
    this.disarm();
    return new Promise((resolve) => {
      this.armed = { ...fault, calls: Math.max(1, fault.calls), skip: Math.max(0, fault.skip), reported: false, report: resolve };
    });
  }

  /** Stops the armed fault from hitting further calls. */
  disarm(): void {
    const armed = this.armed;
    this.armed = null;
    if (armed && !armed.reported) armed.report(null);
  }

  /** Forgets the namespace: its URL answers 404 from now on; delayed and held answers end. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.disarm();
    for (const release of this.waiters) release();
    this.waiters.clear();
    this.onClose(this);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Effects applied by one service, in order. */
  effectsOf(service: ApiService): ApiEffect[] {
    return this.effects.filter((e) => e.service === service);
  }

  // ---- request handling ----------------------------------------------------------------------

  async handle(method: string, segments: string[], headers: http.IncomingHttpHeaders, rawBody: string, res: http.ServerResponse): Promise<void> {
    const path = `/${segments.map(encodeURIComponent).join('/')}`;
    const kept = path.length > MAX_CALL_PATH_CHARS ? `${path.slice(0, MAX_CALL_PATH_CHARS)}…` : path;
    const call: ApiCall = { seq: ++this.callSeq, at: Date.now(), method, path: kept, key: null, status: null, outcome: 'invalid' };
    this.calls.push(call);
    if (this.calls.length > this.limits.maxCallsKept) this.calls.splice(0, this.calls.length - this.limits.maxCallsKept);
    let clientGone = false;
    res.once('close', () => {
      if (!res.writableFinished) clientGone = true;
    });
    const answer = (reply: Reply) => {
      call.status = reply.status;
      call.answeredAt = Date.now();
      if (clientGone) return;
      send(res, reply.status, reply.body, reply.headers);
    };
    try {
      const reply = await this.route(method, segments, headers, rawBody, call, res, () => clientGone);
      if (reply) answer(reply);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      if (call.outcome === 'invalid' && err.status === 404) call.outcome = 'not-found';
      answer({ status: err.status, body: { error: err.code, message: err.message, ...err.extra }, headers: err.headers });
    }
  }

  private async route(
    method: string,
    segments: string[],
    headers: http.IncomingHttpHeaders,
    rawBody: string,
    call: ApiCall,
    res: http.ServerResponse,
    clientGone: () => boolean,
  ): Promise<Reply | null> {
    const [resource, ...rest] = segments;
    const allow = (methods: string[]) => {
      if (!methods.includes(method)) {
        throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${call.path}; use ${methods.join(' or ')}.`, {}, { allow: methods.join(', ') });
      }
    };
    if (resource === undefined) {
      allow(['GET']);
      call.outcome = 'read';
      return { status: 200, body: this.describe() };
    }
    if (resource === 'payments' && rest.length === 0) {
      allow(['GET', 'POST']);
      if (method === 'GET') {
        call.outcome = 'read';
        return { status: 200, body: { charges: this.effectsOf('payments').map((e) => ({ ...e.body, idempotencyKey: e.key, chargedAt: new Date(e.at).toISOString() })) } };
      }
      const body = parseBody(paymentRequestSchema, rawBody, headers);
      return this.applyOnce('payments', call, headers, res, clientGone, canonical(['POST /payments', body]), () => {
        const text = JSON.stringify({ paymentId: body.paymentId, amountCents: body.amountCents, currency: body.currency, status: 'charged' });
        return { status: 201, text, effect: { id: body.paymentId, body: { ...body }, changed: true } };
      });
    }
    if (resource === 'rankings' && rest.length === 0) {
      allow(['GET', 'POST']);
      if (method === 'GET') {
        call.outcome = 'read';
        return { status: 200, body: { rankings: [...this.rankings.values()] } };
      }
      const body = parseBody(rankingRequestSchema, rawBody, headers);
      return this.applyOnce('rankings', call, headers, res, clientGone, canonical(['POST /rankings', body]), () =>
        this.upsertRanking(body.campaignId, body.windowStart, body.windowEnd, body.count),
      );
    }
    if (resource === 'rankings' && rest.length === 3) {
      allow(['GET', 'PUT']);
      const [campaignId, windowStart, windowEnd] = rest as [string, string, string];
      if (method === 'GET') {
        const ranking = this.rankings.get(rankingId(campaignId, windowStart, windowEnd));
        if (!ranking) throw new HttpError(404, 'not_found', `No ranking for campaign "${campaignId}" in window ${windowStart} .. ${windowEnd}.`);
        call.outcome = 'read';
        return { status: 200, body: ranking };
      }
      const body = parseBody(rankingPutSchema, rawBody, headers);
      return this.applyOnce('rankings', call, headers, res, clientGone, canonical(['PUT /rankings', campaignId, windowStart, windowEnd, body]), () =>
        this.upsertRanking(campaignId, windowStart, windowEnd, body.count),
      );
    }
    if (resource === 'inventory' || resource === 'charges') {
      const reply = this.saga.route(
        {
          method,
          call,
          allow,
          parse: (schema) => parseBody(schema, rawBody, headers),
          applyOnce: (fingerprint, apply) => this.applyOnce('saga', call, headers, res, clientGone, fingerprint, apply),
        },
        resource,
        rest,
      );
      if (reply) return reply;
    }
    throw new HttpError(404, 'not_found', `No endpoint ${method} ${call.path}. This API has: ${ENDPOINTS.join('; ')}.`);
  }

  private upsertRanking(campaignId: string, windowStart: string | number, windowEnd: string | number, count: number) {
    const id = rankingId(campaignId, windowStart, windowEnd);
    const previous = this.rankings.get(id);
    const ranking = { campaignId, windowStart, windowEnd, count };
    this.rankings.set(id, ranking);
    return {
      status: previous ? 200 : 201,
      text: JSON.stringify(ranking),
      // Window bounds as strings in the record, whether they came as numbers (POST) or in the path (PUT).
      effect: { id, body: { campaignId, windowStart: String(windowStart), windowEnd: String(windowEnd), count }, changed: previous?.count !== count },
    };
  }

  /**
   * The idempotency-key protocol around one effect. `apply` runs at most once per key; its
   * response is stored with the key, as a real server stores it in the same transaction.
   */
  private async applyOnce(
    service: ApiService,
    call: ApiCall,
    headers: http.IncomingHttpHeaders,
    res: http.ServerResponse,
    clientGone: () => boolean,
    fingerprint: string,
    apply: () => StepResult,
  ): Promise<Reply | null> {
    const rawKey = headers['idempotency-key'];
    if (Array.isArray(rawKey)) throw new HttpError(400, 'invalid_idempotency_key', 'Send one Idempotency-Key header, not several.');
    if (rawKey !== undefined) {
      const parsed = idempotencyKeySchema.safeParse(rawKey);
      if (!parsed.success) throw new HttpError(400, 'invalid_idempotency_key', `Idempotency-Key ${parsed.error.issues[0]?.message ?? 'is invalid'}.`);
      call.key = parsed.data;
    }

    const storeKey = call.key === null ? null : `${service}\u0000${call.key}`;
    const stored = storeKey === null ? undefined : this.keys.get(storeKey);

    // api-error refuses only a call that would apply something new, as api-timeout loses only the
    // answer of one that did: a key already applied (or being applied) is a retry, and a program
    // that gives up on its 5xx loses nothing, so the fault would show nothing of it.
    const error = stored ? null : this.take('received', call);
    if (error) {
      call.outcome = 'injected-error';
      throw new HttpError(error.status, 'service_unavailable', 'The service\'s backend is unavailable (injected by the grader); nothing was applied. Retry with the same Idempotency-Key.', {}, { 'retry-after': '1' });
    }
    if (stored && stored.fingerprint !== fingerprint) {
      call.outcome = 'key-reused';
      throw new HttpError(422, 'idempotency_key_reused', `Idempotency-Key "${call.key}" was already used for a different request; a key names one operation.`);
    }
    if (stored?.state === 'in-progress') {
      call.outcome = 'in-progress';
      throw new HttpError(409, 'request_in_progress', `A request with Idempotency-Key "${call.key}" is still being processed; retry later with the same key.`, {}, { 'retry-after': '1' });
    }
    if (storeKey !== null && !stored) {
      // A new key is new state: refused (nothing applied, nothing stored) once the namespace is full.
      this.refuseOverBound(call, this.keys.size >= this.limits.maxKeys, byteLength(storeKey) + byteLength(fingerprint));
      this.keys.set(storeKey, { fingerprint, state: 'in-progress' });
      this.stateBytes += byteLength(storeKey) + byteLength(fingerprint);
    }

    const slow = this.take('processing', call);
    if (slow) await this.wait(slow.delayMs);

    if (stored?.state === 'done') {
      call.outcome = 'replayed';
      return { status: stored.status!, body: stored.text!, headers: { 'idempotent-replayed': 'true' } };
    }
    if (this.closed) return null;

    const forgetKey = () => {
      if (storeKey === null || !this.keys.delete(storeKey)) return;
      this.stateBytes -= byteLength(storeKey) + byteLength(fingerprint);
    };
    let result: StepResult;
    try {
      // Effects are checked before any is applied: past the bound nothing changes, and the key is free again.
      // The bytes an effect and its stored answer can take, from what is known before applying:
      // each holds the body at most once or twice (the fingerprint is the body), plus path and key.
      const most = 3 * byteLength(fingerprint) + byteLength(call.path) + byteLength(call.key ?? '') + 512;
      this.refuseOverBound(call, this.effects.length >= this.limits.maxEffects, most);
      result = apply();
    } catch (err) {
      // Refused before any effect (a request that contradicts the service's state): the key is
      // free again, as if this request had never come.
      forgetKey();
      throw err;
    }
    if (result.effect) {
      const effect: ApiEffect = { seq: ++this.seq, at: Date.now(), service, method: call.method, path: call.path, key: call.key, ...result.effect };
      this.effects.push(effect);
      this.stateBytes += byteLength(JSON.stringify(effect));
    }
    if (storeKey !== null) {
      this.keys.set(storeKey, { fingerprint, state: 'done', status: result.status, text: result.text });
      this.stateBytes += byteLength(result.text);
    }
    call.outcome = result.effect ? 'applied' : 'refused';

    // api-timeout loses the answer of a call that applied a new effect (nothing to lose otherwise).
    const timeout = result.effect ? this.take('applying', call) : null;
    if (timeout) {
      // Applied and stored: only the answer goes missing. Held until the client gives up; a client
      // that waits longer than holdMs gets a 504, and still does not know the charge went through.
      await this.wait(timeout.holdMs, res);
      if (clientGone() || this.closed) {
        call.outcome = 'answer-lost';
        return null;
      }
      return { status: 504, body: { error: 'gateway_timeout', message: 'The backend did not answer in time; the request may or may not have been applied. Retry with the same Idempotency-Key.' } };
    }
    return { status: result.status, body: result.text };
  }

  /**
   * Throws the 429 when the namespace is full: `full` says a count bound is reached, `adding` is
   * the bytes the caller is about to store. Nothing of the request has been applied or kept.
   */
  private refuseOverBound(call: ApiCall, full: boolean, adding: number): void {
    if (!full && this.stateBytes + adding <= this.limits.maxBytes) return;
    this.refusedOverBound++;
    call.outcome = 'over-limit';
    throw new HttpError(
      429,
      'too_much_state',
      `This attempt has reached the lab API's bound (${describeApiStateLimits(this.limits)}). Nothing was applied; a program that needs this many calls is looping.`,
      {},
      { 'retry-after': String(this.limits.retryAfterSeconds) },
    );
  }

  /** Hands the armed fault to this call if it is one the fault hits. */
  private take(stage: (typeof FAULT_STAGE)[ApiFaultKind], call: ApiCall): ArmedFault | null {
    const armed = this.armed;
    if (!armed || FAULT_STAGE[armed.kind] !== stage) return null;
    if (armed.skip > 0) {
      armed.skip--;
      return null;
    }
    armed.calls--;
    if (armed.calls <= 0) this.armed = null;
    call.fault = armed.kind;
    if (!armed.reported) {
      armed.reported = true;
      armed.report({ kind: armed.kind, method: call.method, path: call.path, key: call.key, at: Date.now() });
    }
    return armed;
  }

  /** Sleeps ms, or less if the namespace closes (or `res`'s connection closes, when given). */
  private wait(ms: number, res?: http.ServerResponse): Promise<void> {
    if (this.closed || (res && (res.closed || !res.socket || res.socket.destroyed))) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        res?.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      res?.once('close', done);
    });
  }

  private describe() {
    return {
      api: 'KafkaIQ lab API',
      baseUrl: this.baseUrl,
      endpoints: ENDPOINTS,
      idempotency:
        'Send an Idempotency-Key header on POST and PUT. The same key with the same body returns the stored response (Idempotent-Replayed: true) and applies nothing; ' +
        'the same key with another body is a 422; a key whose first request is still in progress is a 409. Without a key, every request is applied.',
    };
  }
}

const byteLength = (text: string): number => Buffer.byteLength(text, 'utf8');
