/**
 * The page's one WebSocket to the lab server (`/ws`, same origin). The server gives each socket
 * one session and lets only the newest socket of a session id live, so every workbench on a page
 * shares this connection instead of opening its own.
 *
 * It says hello, reconnects with backoff, and validates every incoming message: a message that
 * does not match the protocol is logged and dropped, never allowed to break the UI.
 */
import type { z } from 'zod';
import { PROTOCOL_VERSION, serverMessageSchema, type BROKER_STATES, type clientMessageSchema, type ServerMessage } from '../../shared/messages.ts';
import { parseWithFriendlyErrors } from '../../shared/validate.ts';
import { sessionId } from './storage.ts';

/** What the browser sends: fields with a server-side default may be left out. */
type BrokerState = (typeof BROKER_STATES)[number];

export type OutgoingMessage = z.input<typeof clientMessageSchema>;

export type ConnectionState =
  | { kind: 'connecting'; attempt: number }
  | { kind: 'open'; brokers: string; brokerFaults: boolean; broker: BrokerState; brokerDetail: string; unsandboxed: string | null }
  | { kind: 'waiting'; retryInMs: number; reason: string }
  /** Another tab took this session over; reconnecting would take it back and ping-pong forever. */
  | { kind: 'taken-over' };

export interface ConnectionSubscriber {
  state(state: ConnectionState): void;
  /** `mine`: this subscriber sent the last request (errors and inspect results answer it). */
  message(message: ServerMessage, mine: boolean): void;
}

/** Must match lab-server/server/lab-connection.ts. */
const CLOSE_SESSION_TAKEN_OVER = 4000;
const BACKOFF_MS = [500, 1_000, 2_000, 4_000, 8_000, 15_000];

export class LabConnection {
  private socket: WebSocket | null = null;
  private current: ConnectionState = { kind: 'connecting', attempt: 1 };
  private readonly subscribers = new Set<ConnectionSubscriber>();
  private lastSender: ConnectionSubscriber | null = null;
  private failures = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(private readonly url: string) {
    this.connect();
  }

  get state(): ConnectionState {
    return this.current;
  }

  subscribe(subscriber: ConnectionSubscriber): () => void {
    this.subscribers.add(subscriber);
    subscriber.state(this.current);
    return () => {
      this.subscribers.delete(subscriber);
      if (this.lastSender === subscriber) this.lastSender = null;
    };
  }

  /** Returns false when the server is not reachable right now (the caller tells the learner). */
  send(from: ConnectionSubscriber, message: OutgoingMessage): boolean {
    if (this.current.kind !== 'open' || this.socket?.readyState !== WebSocket.OPEN) return false;
    this.lastSender = from;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  /** Reconnects now instead of waiting for the backoff (e.g. after a takeover, on request). */
  reconnect(): void {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    this.failures = 0;
    this.socket?.close();
    this.connect();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.socket?.close(1000, 'Workbench closed');
    this.socket = null;
  }

  private connect() {
    this.setState({ kind: 'connecting', attempt: this.failures + 1 });
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener('open', () => {
      socket.send(JSON.stringify({ type: 'hello', protocol: PROTOCOL_VERSION, sessionId: sessionId() } satisfies OutgoingMessage));
    });
    socket.addEventListener('message', (event) => {
      if (socket !== this.socket) return;
      const message = this.parse(event.data);
      if (!message) return;
      if (message.type === 'welcome') {
        this.failures = 0;
        this.setState({ kind: 'open', brokers: message.brokers, brokerFaults: message.brokerFaults, broker: message.broker, brokerDetail: '', unsandboxed: message.unsandboxed });
      } else if (message.type === 'broker' && this.current.kind === 'open') {
        this.setState({ ...this.current, broker: message.state, brokerDetail: message.detail });
      }
      for (const subscriber of this.subscribers) subscriber.message(message, subscriber === this.lastSender);
    });
    socket.addEventListener('close', (event) => {
      if (socket !== this.socket || this.closed) return;
      this.socket = null;
      if (event.code === CLOSE_SESSION_TAKEN_OVER) {
        this.setState({ kind: 'taken-over' });
        return;
      }
      const retryInMs = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)] ?? 15_000;
      this.failures++;
      const reason = event.reason || (this.current.kind === 'open' ? 'the connection to the lab server was lost' : 'the lab server is not reachable');
      this.setState({ kind: 'waiting', retryInMs, reason });
      // Jitter, so many tabs of a restarted server do not reconnect in lockstep.
      this.retryTimer = setTimeout(() => this.connect(), retryInMs * (0.8 + Math.random() * 0.4));
    });
  }

  private parse(data: unknown): ServerMessage | null {
    try {
      return parseWithFriendlyErrors(serverMessageSchema, JSON.parse(String(data)), 'Ignored a message from the lab server');
    } catch (err) {
      console.warn(`[kafkaiq] ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  }

  private setState(state: ConnectionState) {
    this.current = state;
    for (const subscriber of this.subscribers) subscriber.state(state);
  }
}

let shared: { connection: LabConnection; users: number } | null = null;

/** The page's shared connection; call the returned release() when the workbench goes away. */
export function acquireConnection(): { connection: LabConnection; release: () => void } {
  if (!shared) {
    const protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    shared = { connection: new LabConnection(`${protocol}//${location.host}/ws`), users: 0 };
  }
  const entry = shared;
  entry.users++;
  let released = false;
  return {
    connection: entry.connection,
    release: () => {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.users === 0 && shared === entry) {
        entry.connection.close();
        shared = null;
      }
    },
  };
}
