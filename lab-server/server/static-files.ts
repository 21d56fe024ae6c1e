/**
 * Serves the built course site (dist/) the way a static host would: content types, index.html
 * for folders, the site's own 404 page, long caching for Astro's hashed assets, gzip for text.
 * Paths are checked before touching the disk, so nothing outside the site folder is reachable.
 * An HTML page's Content-Security-Policy allows exactly its own inline scripts, by hash.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { localLocation, sitePolicy } from './perimeter.ts';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.wasm': 'application/wasm',
  '.webmanifest': 'application/manifest+json',
};
const COMPRESSIBLE = /^(text\/|application\/(json|javascript|xml|manifest\+json)|image\/svg\+xml)/;
/** Astro puts content-hashed bundles here: their URL changes whenever their bytes do. */
const HASHED_ASSET_PREFIX = '/_astro/';

export type StaticHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createStaticHandler(staticDir: string): StaticHandler {
  const root = path.resolve(staticDir);

  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
      return;
    }
    const urlPath = safeUrlPath(req.url ?? '/');
    if (urlPath === null) {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Bad request path\n');
      return;
    }
    const target = await resolveFile(root, urlPath);
    if (target.kind === 'redirect') {
      const query = (req.url ?? '').includes('?') ? (req.url ?? '').slice((req.url ?? '').indexOf('?')) : '';
      res.writeHead(301, { Location: localLocation(target.location + query) }).end();
      return;
    }
    if (target.kind === 'missing') {
      const notFound = path.join(root, '404.html');
      await sendFile(req, res, fs.existsSync(notFound) ? notFound : null, 404, 'no-cache');
      return;
    }
    const cache = urlPath.startsWith(HASHED_ASSET_PREFIX) ? 'public, max-age=31536000, immutable' : 'no-cache';
    await sendFile(req, res, target.file, 200, cache);
  };
}

/**
 * The decoded path of a request URL, or null when it could escape the site folder or is not a
 * path at all. Done on the raw request target: `new URL()` would quietly collapse `/../x` to `/x`.
 */
export function safeUrlPath(requestTarget: string): string | null {
  const raw = requestTarget.split(/[?#]/, 1)[0] ?? '';
  if (!raw.startsWith('/')) return null;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return null;
  }
  // Control characters (browsers drop tabs and newlines from URLs) and backslashes are no path.
  if (/[\x00-\x1f\x7f\\]/.test(decoded)) return null;
  if (decoded.split('/').some((segment) => segment === '..' || segment === '.')) return null;
  return decoded;
}

type Resolved = { kind: 'file'; file: string } | { kind: 'redirect'; location: string } | { kind: 'missing' };

async function resolveFile(root: string, urlPath: string): Promise<Resolved> {
  const candidate = path.join(root, urlPath);
  // Belt and braces after safeUrlPath: the joined path must stay inside the root.
  if (candidate !== root && !candidate.startsWith(root + path.sep)) return { kind: 'missing' };
  const stat = await fs.promises.stat(candidate).catch(() => null); // nothing there: missing
  if (stat?.isFile()) return { kind: 'file', file: candidate };
  if (stat?.isDirectory()) {
    // Pages link with a trailing slash; relative links inside index.html need it too.
    // One leading slash: `//host/` in a Location is another site (localLocation checks again).
    if (!urlPath.endsWith('/')) return { kind: 'redirect', location: encodeURI(`/${urlPath.replace(/^\/+/, '')}/`) };
    const index = path.join(candidate, 'index.html');
    if ((await fs.promises.stat(index).catch(() => null))?.isFile()) return { kind: 'file', file: index }; // no index.html: missing
  }
  return { kind: 'missing' };
}

async function sendFile(req: IncomingMessage, res: ServerResponse, file: string | null, status: number, cacheControl: string) {
  if (file === null) {
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found\n');
    return;
  }
  const stat = await fs.promises.stat(file);
  const type = CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
  const gzip = COMPRESSIBLE.test(type) && stat.size > 1024 && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const headers: Record<string, string | number> = {
    'Content-Type': type,
    'Cache-Control': cacheControl,
    'Last-Modified': stat.mtime.toUTCString(),
    'X-Content-Type-Options': 'nosniff',
    Vary: 'Accept-Encoding',
  };
  if (type.startsWith('text/html')) headers['Content-Security-Policy'] = sitePolicy(String(req.headers.host ?? ''), await inlineScriptHashes(file, stat.mtimeMs));
  if (gzip) headers['Content-Encoding'] = 'gzip';
  else headers['Content-Length'] = stat.size;
  res.writeHead(status, headers);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const source = fs.createReadStream(file);
  await (gzip ? pipeline(source, zlib.createGzip(), res) : pipeline(source, res)).catch(() => {
    // A client that goes away mid-download is normal, not a server error.
  });
}

/** Pages of the built site by file: their inline scripts' hashes, until the file changes. */
const hashCache = new Map<string, { mtimeMs: number; hashes: string[] }>();
const HASH_CACHE_LIMIT = 2_000;

/** SHA-256 (base64) of each inline `<script>` of a page: what its CSP allows to run. */
async function inlineScriptHashes(file: string, mtimeMs: number): Promise<string[]> {
  const cached = hashCache.get(file);
  if (cached?.mtimeMs === mtimeMs) return cached.hashes;
  const html = await fs.promises.readFile(file, 'utf8');
  const hashes = new Set<string>();
  for (const match of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi)) {
    if (/\bsrc\s*=/i.test(match[1] ?? '')) continue;
    hashes.add(createHash('sha256').update(match[2] ?? '', 'utf8').digest('base64'));
  }
  if (hashCache.size >= HASH_CACHE_LIMIT) hashCache.clear();
  const entry = { mtimeMs, hashes: [...hashes] };
  hashCache.set(file, entry);
  return entry.hashes;
}
