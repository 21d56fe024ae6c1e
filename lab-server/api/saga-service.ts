/**
 * The saga lab's participants in the lab HTTP API: an inventory service and a card-charging
 * service, which an orchestrator calls once per order (labs/saga). Both honour Idempotency-Key
 * through the namespace's one protocol (ApiNamespace.applyOnce), so what the grader learns from
 * them is the same as from the payments service: every effect applied, with its key and time.
 *
 * The effects are named `<step>:<orderId>` (reserve, charge, release), so no-duplicate-effects and
 * no-lost-effects count each step of each saga on its own, and saga-outcome
 * (runner/checkers/saga-outcome.ts) reads a saga as the effects of its order.
 *
 * Stock movements are commutative, as inventory systems keep them: every reservation without a key
 * holds the stock again, every release gives one hold back. A release with nothing held is a no-op
 * answered 200 (a compensation must be safe to retry), so releasing twice cannot undo more than was
 * reserved; reserving twice holds the stock twice, which is the duplicate the lab is about.
 */
import type { ApiCall } from './contract.ts';
import { canonical } from './contract.ts';
import { HttpError } from './http.ts';
import { chargeRequestSchema, stockMovementSchema, type ChargeRequest, type StockMovement } from './schemas.ts';
import type { z } from 'zod';

/** Card tokens the charging service declines: 402, nothing charged. */
export const DECLINED_CARDS: ReadonlySet<string> = new Set(['tok_declined', 'tok_insufficient_funds']);

/** What applying one saga step gives: the answer, and the effect, or null when nothing changed. */
export interface StepResult {
  status: number;
  text: string;
  effect: { id: string; body: Record<string, unknown>; changed: boolean } | null;
}

/** What the namespace lends the saga routes: body parsing and its idempotency-key protocol. */
export interface SagaRouteContext {
  method: string;
  call: ApiCall;
  parse<S extends z.ZodType>(schema: S): z.output<S>;
  applyOnce(fingerprint: string, apply: () => StepResult): Promise<{ status: number; body: unknown; headers?: Record<string, string> } | null>;
  allow(methods: string[]): void;
}

/** The inventory's holds per order (how many reservations are in force) of one namespace. */
export class SagaParticipants {
  private readonly holds = new Map<string, { sku: string; quantity: number; held: number }>();

  /** Handles /inventory/... and /charges; undefined for any other path. */
  route(ctx: SagaRouteContext, resource: string, rest: string[]) {
    if (resource === 'inventory' && rest.length === 1 && rest[0] === 'reservations') {
      ctx.allow(['GET', 'POST']);
      if (ctx.method === 'GET') {
        ctx.call.outcome = 'read';
        return Promise.resolve({ status: 200, body: { reservations: [...this.holds].map(([orderId, h]) => ({ orderId, ...h })) } });
      }
      const body = ctx.parse(stockMovementSchema);
      return ctx.applyOnce(canonical(['POST /inventory/reservations', body]), () => this.reserve(body));
    }
    if (resource === 'inventory' && rest.length === 1 && rest[0] === 'releases') {
      ctx.allow(['POST']);
      const body = ctx.parse(stockMovementSchema);
      return ctx.applyOnce(canonical(['POST /inventory/releases', body]), () => this.release(body));
    }
    if (resource === 'charges' && rest.length === 0) {
      ctx.allow(['POST']);
      const body = ctx.parse(chargeRequestSchema);
      return ctx.applyOnce(canonical(['POST /charges', body]), () => charge(body));
    }
    return undefined;
  }

  private reserve(m: StockMovement): StepResult {
    const hold = this.holds.get(m.orderId);
    if (hold && (hold.sku !== m.sku || hold.quantity !== m.quantity)) {
      throw new HttpError(409, 'reservation_mismatch', `Order "${m.orderId}" already holds ${hold.quantity} x ${hold.sku}; one order reserves one article once.`);
    }
    this.holds.set(m.orderId, { sku: m.sku, quantity: m.quantity, held: (hold?.held ?? 0) + 1 });
    const text = JSON.stringify({ orderId: m.orderId, sku: m.sku, quantity: m.quantity, status: 'reserved' });
    return { status: 201, text, effect: { id: `reserve:${m.orderId}`, body: { ...m }, changed: true } };
  }

  private release(m: StockMovement): StepResult {
    const hold = this.holds.get(m.orderId);
    if (hold && hold.held > 0 && (hold.sku !== m.sku || hold.quantity !== m.quantity)) {
      throw new HttpError(409, 'release_mismatch', `Order "${m.orderId}" holds ${hold.quantity} x ${hold.sku}, not ${m.quantity} x ${m.sku}.`);
    }
    if (!hold || hold.held === 0) {
      // Nothing held: releasing again is a no-op, so a retried compensation is always safe.
      return { status: 200, text: JSON.stringify({ orderId: m.orderId, sku: m.sku, quantity: m.quantity, status: 'released', released: 0 }), effect: null };
    }
    hold.held--;
    const text = JSON.stringify({ orderId: m.orderId, sku: m.sku, quantity: m.quantity, status: 'released', released: m.quantity });
    return { status: 200, text, effect: { id: `release:${m.orderId}`, body: { ...m }, changed: true } };
  }
}

function charge(c: ChargeRequest): StepResult {
  if (DECLINED_CARDS.has(c.card)) {
    // Stored under the key like any answer: a retry learns the same decline, and nothing is charged.
    const text = JSON.stringify({ error: 'card_declined', orderId: c.orderId, message: `The card ${c.card} was declined; nothing was charged.` });
    return { status: 402, text, effect: null };
  }
  const text = JSON.stringify({ orderId: c.orderId, amountCents: c.amountCents, status: 'charged' });
  return { status: 201, text, effect: { id: `charge:${c.orderId}`, body: { ...c }, changed: true } };
}
