/**
 * The lab server's web perimeter, by allow-list:
 *  - Host: only the origins the server is configured for (its loopback names on its own port,
 *    plus KAFKAIQ_ORIGINS). A DNS-rebinding page reaches the server under the attacker's host
 *    name, so any other Host is refused (421) before anything runs.
 *  - Origin: a WebSocket upgrade and every state-changing request are compared with the same
 *    configured origins, never with Host (which the client writes).
 *  - Every response carries a Content-Security-Policy (own origin only, frame-ancestors 'none';
 *    an HTML page's inline scripts are allowed by their hashes, see static-files.ts), a
 *    Referrer-Policy and nosniff.
 *  - Redirects are local paths only: never `//host` (scheme-relative) or a full URL.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { KafkaIqError } from '../../src/shared/errors.ts';

export const ORIGINS_ENV = 'KAFKAIQ_ORIGINS';
/** More origins than any real deployment has: a longer list is a mistake in the variable. */
const MAX_ORIGINS = 32;

/**
 * KAFKAIQ_ORIGINS: comma-separated origins the course is served under besides loopback, e.g.
 * `https://kafka.example.edu` behind a TLS proxy. Checked: a typo must fail at start, not open a hole.
 */
export function originsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const raw = env[ORIGINS_ENV];
  if (raw === undefined || raw.trim() === '') return [];
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length > MAX_ORIGINS) throw new KafkaIqError('INVALID_INPUT', `${ORIGINS_ENV} lists ${items.length} origins; at most ${MAX_ORIGINS}.`);
  return items.map((item) => parseOrigin(item, ORIGINS_ENV));
}

/** An origin exactly as a browser sends it (scheme://host[:port], lower case, no path). */
export function parseOrigin(text: string, source: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new KafkaIqError('INVALID_INPUT', `${source}: "${text}" is not an origin: write it as https://host or http://host:port.`);
  }
  const bare = (url.pathname === '/' || url.pathname === '') && !url.search && !url.hash && !url.username && !url.password;
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !bare || /[\s\\]/.test(text)) {
    throw new KafkaIqError('INVALID_INPUT', `${source}: "${text}" is not an origin: write it as https://host or http://host:port (no path, no trailing text).`);
  }
  return url.origin;
}

export interface PerimeterOptions {
  /** The port the server listens on (its loopback origins use it). */
  port: number;
  /** The address it listens on: a specific address is an origin of its own. */
  bindHost: string;
  /** Origins besides loopback (KAFKAIQ_ORIGINS, the dev server's). */
  origins?: readonly string[];
  /** Trust X-Forwarded-Proto (KAFKAIQ_TRUST_PROXY=1: a proxy the operator runs sets it). */
  trustProxy?: boolean;
}

export class Perimeter {
  private readonly origins = new Set<string>();
  /** Host header values (lower case) that the origins above are reached by. */
  private readonly hosts = new Set<string>();
  private readonly httpsHosts = new Set<string>();
  private readonly trustProxy: boolean;

  constructor(options: PerimeterOptions) {
    this.trustProxy = options.trustProxy ?? false;
    const loopback = ['localhost', '127.0.0.1', '[::1]'];
    const bind = options.bindHost.includes(':') ? `[${options.bindHost}]` : options.bindHost;
    // A specific address is reached under its own name; a wildcard (0.0.0.0, ::) is no name at all.
    if (!['0.0.0.0', '[::]', ...loopback].includes(bind)) loopback.push(bind);
    this.allow(loopback.map((host) => `http://${host}:${options.port}`));
    this.allow(options.origins ?? []);
  }

  /** Adds origins (e.g. the dev server's, once it has a port). */
  allow(origins: readonly string[]): void {
    for (const text of origins) {
      const origin = parseOrigin(text, 'allowed origin');
      const url = new URL(origin);
      this.origins.add(origin);
      // Browsers leave a default port out of Host; a client may still write it.
      const defaultPort = url.protocol === 'https:' ? '443' : '80';
      for (const host of [url.host, url.port === '' ? `${url.hostname}:${defaultPort}` : url.host]) {
        this.hosts.add(host);
        if (url.protocol === 'https:') this.httpsHosts.add(host);
      }
    }
  }

  get allowedOrigins(): string[] {
    return [...this.origins];
  }

  hostAllowed(req: IncomingMessage): boolean {
    const host = req.headers.host;
    return typeof host === 'string' && this.hosts.has(host.toLowerCase());
  }

  /** A configured origin exactly; a missing Origin only when the caller allows it (non-browser clients). */
  originAllowed(req: IncomingMessage, allowMissing: boolean): boolean {
    const origin = req.headers.origin;
    if (origin === undefined) return allowMissing;
    return this.origins.has(origin.toLowerCase());
  }

  /**
   * A request that changes state (anything but GET/HEAD/OPTIONS): a browser always sends Origin
   * with one, so a present Origin must be configured and a cross-site fetch is refused. Without
   * Origin it is not a browser acting for another site (a script can forge nothing a browser lends).
   */
  stateChangeAllowed(req: IncomingMessage): boolean {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return true;
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
    return this.originAllowed(req, true);
  }

  /** Whether this request reached us over TLS: Secure cookies then. */
  secure(req: IncomingMessage): boolean {
    if (this.trustProxy && String(req.headers['x-forwarded-proto'] ?? '').split(',')[0]?.trim() === 'https') return true;
    return this.httpsHosts.has(String(req.headers.host ?? '').toLowerCase());
  }

  /**
   * Checks Host and (for a state change) Origin; sets the headers every response carries.
   * Returns false when it has answered the request itself.
   */
  admit(req: IncomingMessage, res: ServerResponse): boolean {
    setBaseHeaders(res, String(req.headers.host ?? ''));
    if (!this.hostAllowed(req)) {
      res.writeHead(421, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(`This KafkaIQ server does not answer to host "${printable(req.headers.host)}": open it by one of its addresses, or add the origin to ${ORIGINS_ENV}.\n`);
      return false;
    }
    if (!(req.url ?? '').startsWith('/')) {
      // Absolute-form targets (`GET http://other/ HTTP/1.1`) are for proxies; this is not one.
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end('Request a path on this server, e.g. GET /\n');
      return false;
    }
    if (!this.stateChangeAllowed(req)) {
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(`Refused a ${req.method} from origin "${printable(req.headers.origin)}": only this server's own pages may change its state.\n`);
      return false;
    }
    return true;
  }
}

/**
 * The site's policy: own origin only, no CDN. Inline scripts pass by hash only (the page's own,
 * computed by static-files.ts); 'wasm-unsafe-eval' is for Pagefind's search index (WebAssembly),
 * not for eval. Styles may be inline: Starlight and Monaco set style attributes and elements.
 * connect-src names ws(s) of the (allow-listed) Host for browsers whose 'self' omits WebSockets.
 */
export function sitePolicy(host: string, scriptHashes: readonly string[] = []): string {
  const ws = /^[a-z0-9.[\]:-]+$/i.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'self'",
    `script-src 'self' 'wasm-unsafe-eval'${scriptHashes.map((h) => ` 'sha256-${h}'`).join('')}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self'${ws}`,
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function setBaseHeaders(res: ServerResponse, host: string): void {
  res.setHeader('Content-Security-Policy', sitePolicy(host));
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
}

/**
 * The request's URL with its path taken as a path: `new URL('//evil/x', base)` would read
 * `evil` as a host and `/x` as the path, so the target is appended to a fixed origin instead.
 */
export function requestUrl(req: IncomingMessage): URL {
  const target = req.url ?? '/';
  return new URL(`http://localhost${target.startsWith('/') ? target : '/'}`);
}

/**
 * A redirect target that stays on this server: one leading slash, never `//` or `/\` (which
 * browsers read as another host), no control characters. Anything else becomes `/`.
 */
export function localLocation(location: string): string {
  const collapsed = location.replace(/^\/+/, '/');
  return /^\/(?![/\\])[^\x00-\x20\x7f\\]*$/.test(collapsed) ? collapsed : '/';
}

/** A header value shown back in an error line: bounded, control characters escaped. */
function printable(value: string | string[] | undefined): string {
  const text = String(value ?? '');
  return text.slice(0, 100).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
