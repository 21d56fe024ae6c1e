/**
 * Values the server signs and the browser only carries (HttpOnly cookies): `v1.<payload>.<HMAC>`,
 * the payload base64url JSON with its expiry inside the signed text, so neither can be changed or
 * extended. Several lab servers behind one load balancer share the key (KAFKAIQ_SESSION_SECRET),
 * so a learner signed in through one is signed in on all.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import { KafkaIqError } from '../../../src/shared/errors.ts';

export const SESSION_SECRET_ENV = 'KAFKAIQ_SESSION_SECRET';
const MIN_SECRET_CHARS = 32;
/** A sealed account is a few hundred characters: anything longer is not ours. */
const MAX_SEALED_CHARS = 4096;
const VERSION = 'v1';

export class SealedValues {
  private readonly key: Buffer;

  constructor(
    secret: string,
    /** What the key is for: a value sealed for one purpose never opens as another. */
    purpose: string,
    private readonly now: () => number = Date.now,
  ) {
    this.key = createHmac('sha256', secret).update(`kafkaiq sealed values: ${purpose}`).digest();
  }

  seal(payload: Record<string, unknown>, ttlMs: number): string {
    const body = `${VERSION}.${Buffer.from(JSON.stringify({ ...payload, exp: this.now() + ttlMs })).toString('base64url')}`;
    return `${body}.${this.mac(body)}`;
  }

  /** The payload of a value this server sealed, unexpired and of the schema's shape; null otherwise. */
  open<T>(value: string | undefined, schema: z.ZodType<T>): T | null {
    if (value === undefined || value.length > MAX_SEALED_CHARS) return null;
    const parts = value.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) return null;
    const expected = Buffer.from(this.mac(`${parts[0]}.${parts[1]}`));
    const given = Buffer.from(parts[2]!);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
    } catch {
      return null; // signed by us, so never the case; refused all the same
    }
    const exp = (payload as { exp?: unknown } | null)?.exp;
    if (typeof exp !== 'number' || exp <= this.now()) return null;
    const { exp: _exp, ...rest } = payload as Record<string, unknown>;
    const parsed = schema.safeParse(rest);
    return parsed.success ? parsed.data : null;
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }
}

/** The key from the environment, checked; a random one (sessions end with the process) when unset. */
export function sessionSecretFromEnv(env: NodeJS.ProcessEnv = process.env): { secret: string; shared: boolean } {
  const secret = env[SESSION_SECRET_ENV];
  if (secret === undefined || secret === '') return { secret: randomBytes(32).toString('base64url'), shared: false };
  if (secret.length < MIN_SECRET_CHARS || !/^[\x21-\x7e]+$/.test(secret)) {
    throw new KafkaIqError('INVALID_INPUT', `${SESSION_SECRET_ENV} must be at least ${MIN_SECRET_CHARS} printable characters without spaces: generate one with 'openssl rand -hex 32'.`);
  }
  return { secret, shared: true };
}
