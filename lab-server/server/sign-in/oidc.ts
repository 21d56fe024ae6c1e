/**
 * Sign-in with the class's OpenID Provider (openid-client): the authorization code flow with PKCE,
 * state and nonce. What the browser keeps is a sealed account cookie (sealed-cookie.ts): whose
 * account, the name the provider gives, whether it is an instructor. The provider is asked only at
 * sign-in, so a provider outage during a class leaves signed-in learners working; a new sign-in
 * then gets a page saying so.
 *
 *   GET  /auth/login[?returnTo=/path]  -> 302 to the provider (a sealed, single-use sign-in cookie)
 *   GET  /auth/callback                -> the account cookie, 303 back to returnTo
 *   POST /auth/logout                  -> the cookie cleared, 303 to /
 *   GET  /auth/me                      -> AccountStatus (src/shared/account.ts)
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as client from 'openid-client';
import { z } from 'zod';
import { ACCOUNT_LEARNER_PREFIX, SIGN_IN_PATHS, type Account, type AccountStatus } from '../../../src/shared/account.ts';
import { MAX_DISPLAY_NAME_CHARS, normaliseDisplayName } from '../../../src/shared/class-view.ts';
import { describeError, KafkaIqError } from '../../../src/shared/errors.ts';
import type { AttemptStore } from '../attempt-store.ts';
import { readCookie } from '../instructor-session.ts';
import { requestUrl } from '../perimeter.ts';
import type { OidcConfig } from './oidc-config.ts';
import { SealedValues } from './sealed-cookie.ts';

export const ACCOUNT_COOKIE = 'kafkaiq_account';
const SIGN_IN_COOKIE = 'kafkaiq_signin';
/** A signed-in learner signs in again after this: a day of class. */
export const ACCOUNT_TTL_MS = 24 * 60 * 60 * 1000;
/** From /auth/login to the provider's answer. */
const SIGN_IN_TTL_MS = 10 * 60 * 1000;
/** How long the provider may take to answer discovery or a token request (openid-client: seconds). */
const PROVIDER_TIMEOUT_S = 5;
/** Clock skew allowed on an ID token's times (openid-client's default is 30 s; servers keep NTP time). */
const CLOCK_TOLERANCE_S = 5;

/** A signed-in account as the server keeps it: the learner id its history is kept under. */
export type SignedInAccount = Account & { learner: string };

const signedInSchema = z
  .object({
    learner: z.string().regex(new RegExp(`^${ACCOUNT_LEARNER_PREFIX}[A-Za-z0-9_-]{40}$`)),
    name: z.string().max(200),
    email: z.string().max(320).nullable(),
    instructor: z.boolean(),
  })
  .strict();
const signInSchema = z
  .object({ state: z.string().max(100), nonce: z.string().max(100), verifier: z.string().max(200), returnTo: z.string().max(500) })
  .strict();

const LOOPBACK_HOST = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/;

export class OidcSignIn {
  private readonly accounts: SealedValues;
  private readonly signIns: SealedValues;
  private configuration: Promise<client.Configuration> | null = null;
  /** States already answered, until they would have expired anyway: a replayed callback is refused. */
  private readonly usedStates = new Map<string, number>();

  constructor(
    private readonly config: OidcConfig,
    secret: string,
    private readonly store: AttemptStore,
    private readonly log: (line: string) => void,
    /** How the server reaches the provider (the tests put a man in the middle here). */
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {
    const issuer = new URL(config.issuer);
    if (issuer.protocol !== 'https:' && !LOOPBACK_HOST.test(issuer.hostname)) {
      throw new KafkaIqError('INVALID_INPUT', `KAFKAIQ_OIDC_ISSUER must be an https URL (${config.issuer} is not): tokens must not cross a network in clear.`);
    }
    this.accounts = new SealedValues(secret, 'account', now);
    this.signIns = new SealedValues(secret, 'sign-in', now);
  }

  /** The provider's discovery at start: null when it answered, else one line for the log (sign-in retries later). */
  async probe(): Promise<string | null> {
    try {
      await this.discovered();
      return null;
    } catch (err) {
      return `Sign-in: the provider at KAFKAIQ_OIDC_ISSUER=${this.config.issuer} cannot be used (${printableLine(describeError(err))}); learners can still work anonymously, and each sign-in asks it again.`;
    }
  }

  /** The signed-in account of a request (its cookie), or null. */
  account(req: IncomingMessage): SignedInAccount | null {
    return this.accounts.open(readCookie(req.headers.cookie, ACCOUNT_COOKIE), signedInSchema);
  }

  /** Handles the request if it is one of sign-in's paths; returns false to let others handle it. */
  handle(req: IncomingMessage, res: ServerResponse, secure: boolean): boolean {
    const url = requestUrl(req);
    switch (url.pathname) {
      case SIGN_IN_PATHS.me: {
        const account = this.account(req);
        const status: AccountStatus = { signInEnabled: true, account: account && { name: account.name, email: account.email, instructor: account.instructor } };
        sendJson(res, 200, status);
        return true;
      }
      case SIGN_IN_PATHS.login:
        void this.login(res, url, secure).catch((err) => this.fail(res, 500, `Sign-in could not start: ${describeError(err)}`));
        return true;
      case SIGN_IN_PATHS.callback:
        void this.callback(req, res, url, secure).catch((err) => this.fail(res, 500, `Sign-in could not finish: ${describeError(err)}`));
        return true;
      case SIGN_IN_PATHS.logout:
        if (req.method !== 'POST') {
          res.setHeader('Allow', 'POST');
          sendPage(res, 405, 'Sign out', '<p>Sign out with the button on the course page (a POST).</p>');
          return true;
        }
        res.writeHead(303, { Location: '/', 'Set-Cookie': clearCookie(ACCOUNT_COOKIE, '/', secure), 'Cache-Control': 'no-store' }).end();
        return true;
      default:
        return false;
    }
  }

  /** The provider's configuration; `fresh` asks it again (each sign-in: a provider that went down is seen at once). */
  private discovered(fresh = false): Promise<client.Configuration> {
    if (fresh) this.configuration = null;
    const insecure = new URL(this.config.issuer).protocol === 'http:';
    this.configuration ??= client
      .discovery(new URL(this.config.issuer), this.config.clientId, { client_secret: this.config.clientSecret, [client.clockTolerance]: CLOCK_TOLERANCE_S }, undefined, {
        timeout: PROVIDER_TIMEOUT_S,
        [client.customFetch]: (url, options) => this.fetchImpl(url, options as RequestInit),
        ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
      })
      .then((configuration) => {
        configuration[client.customFetch] = (url, options) => this.fetchImpl(url, options as RequestInit);
        return configuration;
      })
      .catch((err: unknown) => {
        // Asked again at the next sign-in: a provider that was down may be back.
        this.configuration = null;
        throw err;
      });
    return this.configuration;
  }

  private async login(res: ServerResponse, url: URL, secure: boolean): Promise<void> {
    let configuration: client.Configuration;
    try {
      configuration = await this.discovered(true);
    } catch (err) {
      this.log(`sign-in: the provider at ${this.config.issuer} cannot be used: ${describeError(err)}`);
      return this.fail(res, 503, `The sign-in provider cannot be used right now (${printableLine(describeError(err))}): try again in a minute. The course works without signing in meanwhile, and what you do is kept for when you sign in.`);
    }
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const returnTo = safeReturnPath(url.searchParams.get('returnTo'));
    const target = client.buildAuthorizationUrl(configuration, {
      redirect_uri: `${this.config.publicUrl}${SIGN_IN_PATHS.callback}`,
      // The groups scope is the usual way to get the groups claim (Okta, oidc-provider; others ignore it).
      scope: this.config.allowedGroup || this.config.instructorGroup ? 'openid email profile groups' : 'openid email profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const cookie = sealedCookie(SIGN_IN_COOKIE, this.signIns.seal({ state, nonce, verifier, returnTo }, SIGN_IN_TTL_MS), '/auth', SIGN_IN_TTL_MS, secure);
    res.writeHead(302, { Location: target.href, 'Set-Cookie': cookie, 'Cache-Control': 'no-store' }).end();
  }

  private async callback(req: IncomingMessage, res: ServerResponse, url: URL, secure: boolean): Promise<void> {
    const signIn = this.signIns.open(readCookie(req.headers.cookie, SIGN_IN_COOKIE), signInSchema);
    this.forgetExpiredStates();
    if (!signIn || this.usedStates.has(signIn.state) || url.searchParams.get('state') !== signIn.state) {
      return this.fail(res, 400, 'This sign-in has expired or was already used.');
    }
    this.usedStates.set(signIn.state, this.now() + SIGN_IN_TTL_MS);
    let claims: client.IDToken;
    try {
      const configuration = await this.discovered();
      const current = new URL(`${this.config.publicUrl}${SIGN_IN_PATHS.callback}${url.search}`);
      const tokens = await client.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: signIn.verifier,
        expectedState: signIn.state,
        expectedNonce: signIn.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims()!;
      // Many providers put email, name and groups in the UserInfo answer only (the ID token's
      // claims must then match its subject; the ID token's own values win).
      if (configuration.serverMetadata().userinfo_endpoint) {
        const info = await client.fetchUserInfo(configuration, tokens.access_token, claims.sub);
        claims = { ...info, ...claims } as client.IDToken;
      }
    } catch (err) {
      this.log(`sign-in refused: ${describeError(err)}`);
      return this.fail(res, 401, `The provider's answer could not be accepted (${printableLine(describeError(err))}).`);
    }
    const refusal = this.refusal(claims);
    if (refusal) return this.fail(res, 403, refusal);
    const account = this.accountOf(claims);
    await this.nameInClass(account);
    res.writeHead(303, {
      Location: signIn.returnTo,
      'Set-Cookie': [sealedCookie(ACCOUNT_COOKIE, this.accounts.seal(account, ACCOUNT_TTL_MS), '/', ACCOUNT_TTL_MS, secure), clearCookie(SIGN_IN_COOKIE, '/auth', secure)],
      'Cache-Control': 'no-store',
    });
    res.end();
  }

  /** Why this user may not sign in to this course, or null. */
  private refusal(claims: client.IDToken): string | null {
    const { allowedEmailDomain, allowedGroup } = this.config;
    const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : null;
    if (allowedEmailDomain && !(email?.endsWith(`@${allowedEmailDomain}`) && claims.email_verified !== false)) {
      return `This course is for ${allowedEmailDomain} accounts with a verified email: sign in with one of those.`;
    }
    if (allowedGroup && !this.groups(claims).includes(allowedGroup)) return `This course is for members of ${allowedGroup}: ask your instructor to add you.`;
    return null;
  }

  private groups(claims: client.IDToken): string[] {
    const value = claims[this.config.groupsClaim];
    return Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string') : typeof value === 'string' ? [value] : [];
  }

  private accountOf(claims: client.IDToken): SignedInAccount {
    const email = typeof claims.email === 'string' ? claims.email.slice(0, 320) : null;
    const given = typeof claims.name === 'string' ? normaliseDisplayName(claims.name) : '';
    const name = (given || email || `user ${claims.sub.slice(0, 8)}`).slice(0, 200);
    const instructor =
      (email !== null && this.config.instructorEmails.includes(email.toLowerCase())) || (this.config.instructorGroup !== null && this.groups(claims).includes(this.config.instructorGroup));
    const learner = ACCOUNT_LEARNER_PREFIX + createHash('sha256').update(`${claims.iss}\u0000${claims.sub}`).digest('base64url').slice(0, 40);
    return { learner, name, email, instructor };
  }

  /** The class view shows the provider's name; two alike get the account's short label too. */
  private async nameInClass(account: SignedInAccount): Promise<void> {
    const name = account.name.slice(0, MAX_DISPLAY_NAME_CHARS);
    try {
      if ((await this.store.setDisplayName(account.learner, name)) === 'taken') {
        await this.store.setDisplayName(account.learner, `${name.slice(0, MAX_DISPLAY_NAME_CHARS - 9)} (${account.learner.slice(5, 11)})`);
      }
    } catch (err) {
      // A name the class view cannot show (the store refused it) does not stop the sign-in.
      this.log(`sign-in: could not record the name of ${account.learner}: ${describeError(err)}`);
    }
  }

  private forgetExpiredStates(): void {
    const now = this.now();
    for (const [state, expires] of this.usedStates) if (expires <= now) this.usedStates.delete(state);
  }

  private fail(res: ServerResponse, status: number, why: string): void {
    if (res.headersSent) return void res.end();
    sendPage(res, status, 'Sign-in', `<p>${escapeHtml(why)}</p><p><a href="${SIGN_IN_PATHS.login}">Sign in again</a> or <a href="/">go on without signing in</a>.</p>`);
  }
}

/** A path on this site to come back to (never another origin). */
function safeReturnPath(value: string | null): string {
  return value && /^\/(?![/\\])[\x21-\x7e]{0,400}$/.test(value) ? value : '/';
}

function sealedCookie(name: string, value: string, path: string, ttlMs: number, secure: boolean): string {
  // Lax: the provider's redirect back is a top-level navigation from its site.
  return `${name}=${value}; HttpOnly; SameSite=Lax; Path=${path}; Max-Age=${Math.floor(ttlMs / 1000)}${secure ? '; Secure' : ''}`;
}

function clearCookie(name: string, path: string, secure: boolean): string {
  return `${name}=; HttpOnly; SameSite=Lax; Path=${path}; Max-Age=0${secure ? '; Secure' : ''}`;
}

const printableLine = (text: string) => text.replace(/[\p{Cc}\p{Cf}]/gu, ' ').slice(0, 200);
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function sendPage(res: ServerResponse, status: number, title: string, body: string): void {
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · KafkaIQ</title></head><body><main><h1>${title}</h1>${body}</main></body></html>`);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}
