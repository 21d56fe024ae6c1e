/**
 * Request bodies of the lab HTTP API, validated with zod. Strict objects: a field the API does not
 * know is a 400, as in a careful real API, so a program cannot pass by sending junk along.
 */
import { z } from 'zod';

export const paymentRequestSchema = z
  .object({
    paymentId: z
      .string()
      .min(1)
      .max(64)
      .describe('The reference of the payment: what the charge is for (one charge per paymentId is intended)'),
    amountCents: z.number().int().min(1).max(100_000_000).describe('Amount in cents, a positive integer'),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code in capitals, e.g. "EUR"')
      .describe('ISO 4217 currency code'),
  })
  .strict();

/** Window bounds: epoch milliseconds or any string (an ISO time, say); compared as strings. */
const windowBound = z.union([z.number().int().min(0), z.string().min(1).max(64)]);

export const rankingRequestSchema = z
  .object({
    campaignId: z.string().min(1).max(64),
    windowStart: windowBound,
    windowEnd: windowBound,
    count: z.number().int().min(0).max(1_000_000_000),
  })
  .strict();

/** PUT /rankings/:campaignId/:windowStart/:windowEnd: the path names the ranking, the body its value. */
export const rankingPutSchema = z.object({ count: z.number().int().min(0).max(1_000_000_000) }).strict();

/** An Idempotency-Key: printable ASCII, as the IETF draft and the big payment APIs allow. */
export const idempotencyKeySchema = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

// ---- the saga lab's two participants (saga-service.ts) --------------------------------------

const orderId = z.string().min(1).max(64).describe('The order the step is for: one saga per order');

/** POST /inventory/reservations and POST /inventory/releases: a stock movement for one order. */
export const stockMovementSchema = z
  .object({
    orderId,
    sku: z.string().min(1).max(64).describe('The article reserved or released'),
    quantity: z.number().int().min(1).max(1_000).describe('How many units'),
  })
  .strict();
export type StockMovement = z.infer<typeof stockMovementSchema>;

/** POST /charges: charge an order's total to the customer's card token. */
export const chargeRequestSchema = z
  .object({
    orderId,
    amountCents: z.number().int().min(1).max(100_000_000).describe('The order total in cents'),
    card: z
      .string()
      .regex(/^tok_[a-z0-9_]{1,40}$/i, 'must be a card token such as "tok_visa"')
      .describe('The customer\'s card token; the service declines some (402)'),
  })
  .strict();
export type ChargeRequest = z.infer<typeof chargeRequestSchema>;
