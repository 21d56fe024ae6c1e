/**
 * The lab HTTP API: a small payments / rankings service that learner programs call with fetch().
 *
 * One server per grading process (the lab server, `kafkaiq grade`, `kafkaiq check`, a test), on
 * 127.0.0.1 and a free port, started on first use. Every attempt opens a namespace of its own and
 * gets the base URL `http://127.0.0.1:<port>/a/<namespace>`: concurrent attempts never see each
 * other's keys or effects, and a URL of a finished attempt answers 404.
 *
 * It behaves like a careful real API with idempotency keys (Stripe's, or the IETF draft's):
 *  - a request with an `Idempotency-Key` does its work once; the same key with the same body
 *    later gets the stored response (header `Idempotent-Replayed: true`) and no new effect;
 *  - the same key with a different body is a 422, and a key whose first request is still being
 *    processed is a 409 (retry later);
 *  - a request WITHOUT a key is applied every time: the bug the labs make visible.
 * Every applied effect is recorded (key, body, time), which is what the grader counts.
 * What one attempt may keep is bounded (src/shared/api-limits.ts): past it, 429 with Retry-After.
 *
 * The grader can also arm one fault at a time (runner/nemesis/api-faults.ts): `api-slow` (the next calls
 * are answered late), `api-error` (a 5xx, nothing applied) and `api-timeout` (the effect IS applied
 * and stored under its key, but the answer is held until the client gives up).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { send } from './http.ts';
import { ApiNamespace } from './namespace.ts';
import { DEFAULT_API_STATE_LIMITS, type ApiStateLimits } from '../../src/shared/api-limits.ts';

export type { ApiCall, ApiEffect, ApiFaultArm, ApiFaultHit, ApiFaultKind, ApiService, CallOutcome } from './contract.ts';
export { ApiNamespace } from './namespace.ts';

const MAX_BODY_BYTES = 64 * 1024;
const NAMESPACE_PATTERN = /^[A-Za-z0-9._-]{1,200}$/;

/** The one HTTP server of this process; namespaces come and go with attempts. */
export class LabApiServer {
  private readonly namespaces = new Map<string, ApiNamespace>();

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
  ) {}

  static async start(): Promise<LabApiServer> {
    let self: LabApiServer | null = null;
    const server = http.createServer((req, res) => {
      void self!.serve(req, res).catch((err) => {
        send(res, 500, { error: 'internal_error', message: `The lab API failed: ${(err as Error)?.message ?? err}` });
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    // The grader's process must be able to exit while the API still listens (`kafkaiq grade`).
    server.unref();
    self = new LabApiServer(server, (server.address() as AddressInfo).port);
    return self;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Opens an attempt's namespace; its base URL is `<origin>/a/<name>`. Its state is bounded by `limits`. */
  open(name: string, limits: ApiStateLimits = DEFAULT_API_STATE_LIMITS): ApiNamespace {
    if (!NAMESPACE_PATTERN.test(name)) throw new KafkaIqError('INTERNAL', `Invalid lab API namespace "${name}".`);
    if ([...this.namespaces.values()].some((ns) => ns.name === name)) throw new KafkaIqError('INTERNAL', `Lab API namespace "${name}" is already open.`);
    // The path segment is the namespace plus a secret of its own: namespaces follow a pattern
    // another attempt could guess, 128 random bits it cannot. The URL is the attempt's credential.
    const key = `${name}.${randomBytes(16).toString('base64url')}`;
    const ns = new ApiNamespace(name, `${this.origin}/a/${key}`, (closed) => {
      if (this.namespaces.get(key) === closed) this.namespaces.delete(key);
    }, limits);
    this.namespaces.set(key, ns);
    return ns;
  }

  /** Stops listening (tests); open namespaces are closed. */
  async close(): Promise<void> {
    for (const ns of [...this.namespaces.values()]) ns.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://lab-api');
    let segments: string[];
    try {
      segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      return send(res, 400, { error: 'invalid_path', message: 'The path is not valid URL encoding.' });
    }
    if (segments[0] !== 'a' || segments.length < 2) {
      req.resume();
      return send(res, 404, { error: 'not_found', message: 'Lab API paths start with /a/<namespace>/: use the API_URL your program was given.' });
    }
    const ns = this.namespaces.get(segments[1]!);
    if (!ns) {
      req.resume();
      return send(res, 404, {
        error: 'unknown_namespace',
        message: 'No such lab API namespace: it belonged to an attempt that has ended, or the URL is wrong. Use the API_URL your program was given.',
      });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) {
        send(res, 413, { error: 'body_too_large', message: `Bodies are limited to ${MAX_BODY_BYTES / 1024} KB.` });
        req.destroy();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    await ns.handle(req.method ?? 'GET', segments.slice(2), req.headers, Buffer.concat(chunks).toString('utf8'), res);
  }
}

let started: Promise<LabApiServer> | null = null;

/** The process's lab API server, started on first use. */
export function labApi(): Promise<LabApiServer> {
  if (!started) {
    started = LabApiServer.start();
    started.catch(() => (started = null));
  }
  return started;
}
