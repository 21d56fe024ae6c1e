/** The JSON APIs' two halves at the HTTP boundary: a bounded JSON body in, a JSON reply out. */
import type { IncomingMessage, ServerResponse } from 'node:http';

export type JsonBody = { ok: true; value: unknown } | { ok: false; status: 400 | 413 };

/** Reads at most `maxBytes` of the request and parses it as JSON: 413 past the bound, 400 when it is not JSON. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<JsonBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return { ok: false, status: 413 };
    chunks.push(chunk);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { ok: false, status: 400 }; // not JSON: the caller says what it expected
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}
