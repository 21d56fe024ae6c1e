/**
 * One program instance as the grader sees it on the wire: every connection its sandbox's relay
 * carries (Kafka, PostgreSQL, the lab API) is decoded here, each message is named as a crash point
 * by the point table (wire-points.ts), and the events the runner reads of a program (a call, a
 * failed call, a hit, a group membership) are made from those, never from the program's word.
 *
 * Crash points are armed here, outside the program's process: the message at the armed point is
 * held by the relay, before the server sees it ("before X") or before the program sees the answer
 * ("after X"), while the runner kills or freezes the instance. Nothing of the arm is reachable
 * from inside the sandbox.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { ArmAction, ChildEvent, InstrumentedOp, RunnerCommand } from '../program/child/protocol.ts';
import type { CrashPoint } from '../../../src/shared/report.ts';
import { printable, WireProtocolError, type WireDecoder } from './contract.ts';
import { produceRefusal } from './kafka-answers.ts';
import { DEFAULT_KAFKA_LIMITS, KafkaConnectionDecoder, type KafkaRequest, type KafkaResponse } from './kafka-wire.ts';
import { HttpRequestDecoder, HttpResponseDecoder, type HttpRequestMessage, type HttpResponseMessage } from './http-wire.ts';
import { PostgresBackendDecoder, PostgresFrontendDecoder, type PostgresBackendMessage, type PostgresFrontendMessage } from './postgres-wire.ts';
import { httpPoint, postgresPoint, requestPath, type WirePoint } from './wire-points.ts';
import { WireTransactions } from './wire-transactions.ts';

export type WireProtocol = 'kafka' | 'postgres' | 'http';

/**
 * What the relay does with a message: deliver it now (null), or when the promise says: 'forward'
 * delivers it, 'drop' never does (the instance was killed: its connection is closing), 'answered'
 * never does and goes on with the rest (the relay answered it in the server's place).
 */
export type Hold = Promise<'forward' | 'drop' | 'answered'> | null;

/** One relayed connection: its two decoders, and what to do with each message they name. */
export interface TappedConnection {
  requests: WireDecoder<unknown>;
  responses: WireDecoder<unknown>;
  request(message: unknown): Hold;
  response(message: unknown): Hold;
  /** Set by the relay: the responses decoder has a frame of the relay's own to give (push it an empty chunk). */
  wakeResponses: () => void;
}

/** The events a tap emits: ChildEvent's shapes, so the runner reads a wire-watched program as it reads any. */
export type WireEvent = ChildEvent;

const require = createRequire(import.meta.url);
const KAFKA_ERRORS = new Map<number, string>(
  (require('kafkajs/src/protocol/error.js') as { errorCodes: Array<{ type: string; code: number }> }).errorCodes.map((e) => [e.code, e.type]),
);
const errorName = (code: number) => KAFKA_ERRORS.get(code) ?? `Kafka error ${code}`;

interface Arm {
  point: CrashPoint;
  action: ArmAction;
  remaining: number;
  topic?: string;
  path?: string;
}

/** HTTP requests one connection may have waiting for their answers (the relay pairs each answer with its request's path). */
const MAX_PIPELINED = 64;

export class WireTap extends EventEmitter<{ event: [WireEvent]; line: [string] }> {
  private readonly transactions = new WireTransactions();
  private armed: Arm | null = null;
  /** Messages held at a hit: released to the server or the program on 'continue', dropped on a kill. */
  private held: Array<(outcome: 'forward' | 'drop') => void> = [];
  /** Group memberships already announced, so a heartbeat does not repeat one. */
  private readonly members = new Set<string>();
  /** When the instance last asked the broker for records (a Fetch request); 0: never. */
  lastFetchAt = 0;
  /** When the instance last sent the broker any request; 0: never. */
  lastRequestAt = 0;
  /** When it last sent its database a statement (a Query or an Execute); 0: never. */
  lastQueryAt = 0;

  /** A connection of the given protocol; its decoders' refusals end it (the relay's job). */
  connection(protocol: WireProtocol): TappedConnection {
    if (protocol === 'kafka') {
      // While a send error is armed, Produce requests are held whole, so the one it hits can be
      // answered by the relay and never reach the broker.
      const kafka = new KafkaConnectionDecoder(DEFAULT_KAFKA_LIMITS, (api) => api === 'Produce' && this.armed?.action === 'error');
      const connection: TappedConnection = {
        requests: kafka.requests,
        responses: kafka.responses,
        request: (m) => {
          const request = m as KafkaRequest;
          return this.kafka(request, () => {
            if (request.body?.api !== 'Produce') return false;
            const { frame, body } = produceRefusal(request.body, request.correlationId, request.apiVersion);
            kafka.answerInstead(request, frame, body);
            connection.wakeResponses();
            return true;
          });
        },
        response: (m) => this.kafka(m as KafkaResponse),
        wakeResponses: () => {},
      };
      return connection;
    }
    if (protocol === 'postgres') {
      const frontend = new PostgresFrontendDecoder();
      const backend = new PostgresBackendDecoder();
      let inTransaction = false;
      return {
        requests: frontend,
        responses: backend,
        wakeResponses: () => {},
        request: (m) => {
          const message = m as PostgresFrontendMessage;
          if (message.kind === 'encryption-request') backend.expectEncryptionAnswer();
          if (message.kind === 'query' || message.kind === 'execute') this.lastQueryAt = Date.now();
          return this.point(postgresPoint(message, inTransaction));
        },
        response: (m) => {
          const message = m as PostgresBackendMessage;
          if (message.kind === 'encryption-answer' && message.accepted) frontend.encrypted();
          if (message.kind === 'ready') inTransaction = message.status !== 'idle';
          return this.point(postgresPoint(message, inTransaction));
        },
      };
    }
    const requests = new HttpRequestDecoder();
    const responses = new HttpResponseDecoder();
    // HTTP/1.1 answers come in the order of the requests: each answer is paired with its request's path.
    const paths: string[] = [];
    return {
      requests,
      responses,
      wakeResponses: () => {},
      request: (m) => {
        const message = m as HttpRequestMessage;
        responses.requestSent(message.method);
        const path = requestPath(message.target);
        if (paths.length >= MAX_PIPELINED) throw new WireProtocolError(`more than ${MAX_PIPELINED} HTTP requests sent without waiting for their answers`);
        paths.push(path);
        return this.point(httpPoint(message, path));
      },
      response: (m) => this.point(httpPoint(m as HttpResponseMessage, paths.shift() ?? '')),
    };
  }

  /** The runner's commands that concern crash points: arm, disarm, continue. */
  command(command: RunnerCommand): void {
    if (command.t === 'arm') {
      this.armed = { point: command.point, action: command.action, remaining: command.occurrence, ...(command.topic ? { topic: command.topic } : {}), ...(command.path ? { path: command.path } : {}) };
    }
    else if (command.t === 'disarm') this.armed = null;
    else this.release('forward');
  }

  /** The instance is gone (killed, or its sandbox ended): what was held is never delivered. */
  dropHeld(): void {
    this.release('drop');
  }

  /** A connection refused by a decoder, for the timeline. */
  refused(protocol: WireProtocol, why: string): void {
    this.emit('line', `the grader's relay closed one ${protocol} connection of this program: ${printable(why, 200)}`);
  }

  /** A producer of the instance whose open transaction carries records (not one being aborted), by transactional id; null: none. */
  openTransactionCarryingRecords(): { transactionalId: string } | null {
    return this.transactions.openCarryingRecords();
  }

  /** Whether a producer of the instance has a transaction open at the broker with records in it. */
  get transactionWithRecordsOpen(): boolean {
    return this.transactions.anyOpenWithRecords();
  }

  private release(outcome: 'forward' | 'drop'): void {
    const held = this.held;
    this.held = [];
    for (const resolve of held) resolve(outcome);
  }

  /** `answer`: for a request the relay may answer in the broker's place, does so (false: it cannot). */
  private kafka(message: KafkaRequest | KafkaResponse, answer?: () => boolean): Hold {
    if (message.kind === 'request') {
      this.lastRequestAt = Date.now();
      if (message.api === 'Fetch') this.lastFetchAt = this.lastRequestAt;
    }
    const body = message.kind === 'request' ? message.body : null;
    if (body && 'memberId' in body && body.memberId) {
      const key = `${body.groupId}\u0000${body.memberId}`;
      if (!this.members.has(key) && this.members.size < 64) {
        this.members.add(key);
        this.emit('event', { t: 'member', groupId: body.groupId.slice(0, 249), memberId: body.memberId.slice(0, 300) });
      }
    }
    const found = this.transactions.apply(message, errorName);
    if (!found) return null;
    // A Produce with acks=0 gets no answer from a broker, so none from the relay either.
    const answerable = message.kind === 'request' && message.whole && !(body?.api === 'Produce' && body.acks === 0);
    const refuse = answer && answerable ? answer : undefined;
    return this.point({ ...found, carries: () => this.transactions.carriesBatch(found.producerId, found.point), ...(refuse ? { refuse } : {}) });
  }

  /**
   * Reports the point as a call (or a failed one) and holds it when it is the armed one. An armed
   * send error is the relay's refusal in the broker's place (`refuse`), so it hits only a request
   * the relay held whole: one that arrived after the arm.
   */
  private point(found: (WirePoint & { refuse?: () => boolean }) | null): Hold {
    if (!found) return null;
    // As the runner keeps it per instance: whether any of its producers holds a transaction open.
    const txnOpen = found.txnOpen ?? this.transactions.anyOpen();
    const producer = found.transactionalId ? { transactionalId: printable(found.transactionalId, 249) } : {};
    if (found.error) {
      const op = found.point.slice(found.point.indexOf(':') + 1) as InstrumentedOp;
      this.emit('event', { t: 'failed', op, txnOpen, error: found.error });
      return null;
    }
    this.emit('event', { t: 'call', point: found.point, txnOpen, ...(found.records !== undefined ? { records: found.records } : {}), ...(found.point === 'after:commit' ? { written: found.written.slice(0, 64) } : {}), ...producer });
    const armed = this.armed;
    if (!armed || armed.point !== found.point) return null;
    if (armed.topic && !found.written.includes(armed.topic)) return null;
    if (armed.path && found.path !== armed.path) return null;
    if (armed.action === 'error' && !found.refuse) return null;
    if (--armed.remaining > 0) return null;
    this.armed = null;
    // "Inside a transaction" only when this instance's own transaction carries the batch.
    const inside = found.carries ? found.carries() : txnOpen;
    this.emit('event', { t: 'hit', point: found.point, action: armed.action, txnOpen: inside, ...producer });
    // 'stop' lets the call go on (the runner sends SIGTERM).
    if (armed.action === 'stop') return null;
    if (armed.action === 'error') return Promise.resolve(found.refuse!() ? 'answered' : 'forward');
    return new Promise((resolve) => this.held.push(resolve));
  }
}
