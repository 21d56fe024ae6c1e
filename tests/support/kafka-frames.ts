/** Kafka frames as the two clients write them, for the relay's decoder tests. */
import { createRequire } from 'node:module';
import { Writer } from '@platformatic/kafka';

const require = createRequire(import.meta.url);
const frameOf = require('kafkajs/src/protocol/request.js') as (r: { correlationId: number; clientId: string; request: unknown }) => Promise<{ buffer: Buffer }>;
export const kafkajsRequest = (api: string, version: number) => require(`kafkajs/src/protocol/requests/${api}/v${version}/request.js`);
export const kafkajsResponse = (api: string, version: number) => require(`kafkajs/src/protocol/requests/${api}/v${version}/response.js`);
export const Long = require('kafkajs/src/utils/long.js');

/** A kafkajs request as it goes on the wire. */
export async function kafkajsFrame(correlationId: number, request: unknown): Promise<Buffer> {
  return (await frameOf({ correlationId, clientId: 'kafkajs', request })).buffer;
}

/** A @platformatic/kafka request body behind a request header v2 (flexible versions). */
export function flexibleFrame(apiKey: number, apiVersion: number, correlationId: number, body: Writer): Buffer {
  const header = Writer.create().appendInt16(apiKey).appendInt16(apiVersion).appendInt32(correlationId).appendString('plt', false).appendTaggedFields();
  const frame = Writer.create().appendFrom(header).appendFrom(body).prependLength();
  return frame.buffer;
}

/** A response frame: correlation id, a header's tagged fields when `flexible`, then the body. */
export function responseFrame(correlationId: number, body: Writer, flexible = true): Buffer {
  const head = Writer.create().appendInt32(correlationId);
  if (flexible) head.appendTaggedFields();
  return head.appendFrom(body).prependLength().buffer;
}
