/** The lab HTTP API's HTTP helpers: error replies, JSON bodies parsed against a schema, the endpoint list. */
import type http from 'node:http';
import type { z } from 'zod';

export type Reply = { status: number; body: unknown; headers?: Record<string, string> };

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const ENDPOINTS = [
  'POST /payments {"paymentId","amountCents","currency"} -> 201 {"paymentId","amountCents","currency","status":"charged"}',
  'GET /payments (the charges applied so far)',
  'POST /rankings {"campaignId","windowStart","windowEnd","count"} -> 201 created / 200 replaced',
  'PUT /rankings/:campaignId/:windowStart/:windowEnd {"count"} -> 201 created / 200 replaced',
  'GET /rankings, GET /rankings/:campaignId/:windowStart/:windowEnd',
  // The saga lab's participants (saga-service.ts).
  'POST /inventory/reservations {"orderId","sku","quantity"} -> 201 {"orderId","sku","quantity","status":"reserved"}',
  'POST /inventory/releases {"orderId","sku","quantity"} -> 200 {"orderId","sku","quantity","status":"released","released"} (nothing held: a no-op, "released":0)',
  'POST /charges {"orderId","amountCents","card"} -> 201 {"orderId","amountCents","status":"charged"}, or 402 {"error":"card_declined"} and nothing charged',
  'GET /inventory/reservations (the holds per order)',
];

export function parseBody<S extends z.ZodType>(schema: S, raw: string, headers: http.IncomingHttpHeaders): z.output<S> {
  const type = String(headers['content-type'] ?? '');
  if (type && !/^application\/json\b/i.test(type)) throw new HttpError(415, 'unsupported_media_type', `Send JSON with Content-Type: application/json (got "${type}").`);
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new HttpError(400, 'invalid_json', raw.trim() ? 'The body is not valid JSON.' : 'The body is empty; send a JSON object.');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(body)'}: ${i.message}`);
    throw new HttpError(400, 'invalid_request', `The body is not a valid request: ${issues.slice(0, 3).join('; ')}`, { issues });
  }
  return parsed.data;
}

export function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
