/**
 * The runner's side of the IPC with a learner's process: every message is untrusted input (the
 * program can call process.send itself), so it is parsed against the one shape the kafkajs
 * wrapper sends, with bounded strings and counts; anything else is dropped.
 */
import { z } from 'zod';
import { crashPointSchema } from '../../../../src/shared/report.ts';
import type { ChildEvent } from './protocol.ts';

const op = z.enum(['send', 'sendOffsets', 'commit', 'abort', 'commitOffsets', 'db-write', 'db-commit']);
const shortText = (max: number) => z.string().max(max);

export const childEventSchema = z.discriminatedUnion('t', [
  z
    .object({
      t: z.literal('call'),
      point: crashPointSchema,
      txnOpen: z.boolean(),
      records: z.number().int().min(0).max(1_000_000).optional(),
      written: z.array(shortText(249)).max(64).optional(),
    })
    .strict(),
  z.object({ t: z.literal('failed'), op, txnOpen: z.boolean(), error: shortText(300) }).strict(),
  z.object({ t: z.literal('hit'), point: crashPointSchema, action: z.enum(['kill', 'pause', 'stop', 'error']), txnOpen: z.boolean() }).strict(),
  z.object({ t: z.literal('member'), groupId: shortText(249), memberId: shortText(300) }).strict(),
]);

/** The event, or null for a message that is not one (dropped by the caller). */
export function parseChildEvent(message: unknown): ChildEvent | null {
  const parsed = childEventSchema.safeParse(message);
  return parsed.success ? (parsed.data as ChildEvent) : null;
}
