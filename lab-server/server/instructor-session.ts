/**
 * The instructor's signed session: after sign-in (the token, once) the browser holds a cookie
 * `v1.<expires ms>.<nonce>.<HMAC>` that names no secret. The key is derived from the token, so a
 * new token ends every session; the expiry is inside the signed text, so it cannot be extended.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'kafkaiq_instructor';
/** A working day; then the instructor signs in again. */
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;
const VERSION = 'v1';
/** A real cookie is about 80 characters: a longer one is not ours. */
const MAX_COOKIE_CHARS = 200;

export class InstructorSessions {
  private readonly key: Buffer;

  constructor(
    private readonly token: string,
    private readonly now: () => number = Date.now,
  ) {
    this.key = createHmac('sha256', token).update('kafkaiq instructor session key').digest();
  }

  /** Constant-time check of an offered token (sign-in and `Authorization: Bearer`). */
  tokenMatches(offered: string): boolean {
    const digest = (s: string) => createHash('sha256').update(s).digest();
    return timingSafeEqual(digest(offered), digest(this.token));
  }

  /** A fresh signed session value, valid for SESSION_TTL_MS. */
  issue(): string {
    const body = `${VERSION}.${this.now() + SESSION_TTL_MS}.${randomBytes(16).toString('base64url')}`;
    return `${body}.${this.sign(body)}`;
  }

  /** True for a value this server signed that has not expired. */
  valid(value: string | undefined): boolean {
    if (value === undefined || value.length > MAX_COOKIE_CHARS) return false;
    const parts = value.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION) return false;
    const [, expires, nonce, mac] = parts as [string, string, string, string];
    if (!/^\d{1,15}$/.test(expires) || !/^[A-Za-z0-9_-]{16,64}$/.test(nonce)) return false;
    const expected = Buffer.from(this.sign(`${VERSION}.${expires}.${nonce}`));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    return Number(expires) > this.now();
  }

  /** The Set-Cookie header: HttpOnly, SameSite=Strict, scoped to the class view, Secure over TLS. */
  cookie(value: string, options: { path: string; secure: boolean }): string {
    return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=${options.path}; Max-Age=${SESSION_TTL_MS / 1000}${options.secure ? '; Secure' : ''}`;
  }

  static clearCookie(options: { path: string; secure: boolean }): string {
    return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=${options.path}; Max-Age=0${options.secure ? '; Secure' : ''}`;
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }
}

/** One cookie's value from a Cookie header (first match), or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
