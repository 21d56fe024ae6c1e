/**
 * One WebSocket = one learner session. This is the only module that speaks the wire protocol:
 * it validates every client message, drives the LabSessionApi, turns SessionListener calls into
 * server messages and answers every failure with a one-line `error` message (never a crash).
 */
import type { RawData, WebSocket } from 'ws';
import type { LabSessionApi, SessionListener } from '../runner/contract.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { clientMessageSchema, PROTOCOL_VERSION, type ClientMessage, type ServerMessage } from '../../src/shared/messages.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';
import type { GradeReport } from '../../src/shared/report.ts';
import type { GradeQueue, MessageRate } from './admission.ts';
import type { AttemptStore } from './attempt-store.ts';
import type { ResolveLearner } from './sign-in/learner-identity.ts';
import { ABANDONED_AFTER_MS, type ServerGrades } from './grades-in-flight.ts';
import { bestEffort } from '../core/best-effort.ts';
import type { LearnerQuotas } from './learner-quotas.ts';
import { boundReport } from './bounded-report.ts';
import { readReferenceSolution } from './reference-solution.ts';
import type { BrokerHealth, BrokerHealthState } from '../broker/health.ts';

export type CreateSession = (options: { sessionId: string; listener: SessionListener }) => LabSessionApi;

export interface ClusterInfo {
  /** Bootstrap address, shown to the learner. */
  brokers: string;
  /** False on an external cluster, where the server cannot restart brokers. */
  brokerFaults: boolean;
  /** The broker's health (the server supervises its own broker; others are polled). */
  health?: BrokerHealth;
  /** null when learner programs run sandboxed; else the notice the workbench shows. */
  unsandboxed?: string | null;
}

export interface ConnectionDeps {
  createSession: CreateSession;
  store: AttemptStore;
  cluster: ClusterInfo;
  /** The server's grade slots: a grade waits here for its turn. */
  grades: GradeQueue;
  /** This connection's message budget. */
  rate: MessageRate;
  /** Runs and grades per learner, and who this connection's learner is (their address). */
  quotas: LearnerQuotas;
  learner: string;
  /** This server's grades under way, recorded in the store (grades-in-flight.ts). */
  inFlight: ServerGrades;
  /** Whose work this connection's hello names: the signed-in account's, or the browser's own id (sign-in/learner-identity.ts). */
  resolveLearner: ResolveLearner;
  log: (line: string) => void;
  /** Called once hello is accepted; returns the connection this one replaces (same session id). */
  claimSession(sessionId: string, connection: LabConnection): LabConnection | undefined;
  releaseSession(sessionId: string, connection: LabConnection): void;
}

/** Close code sent to a tab whose session was opened somewhere else; the client must not reconnect. */
export const CLOSE_SESSION_TAKEN_OVER = 4000;
/** Output is dropped (and counted) while this much is still waiting to reach a slow browser. */
const OUTPUT_BACKLOG_LIMIT = 2 * 1024 * 1024;
const MAX_OUTPUT_LINE = 8 * 1024;

export class LabConnection {
  /** Cleared before each keepalive ping, set again by the pong. */
  alive = true;
  /** Whether hello was accepted (a socket that never says it is closed by the server). */
  get greeted(): boolean {
    return this.session !== null;
  }
  private sessionId: string | null = null;
  private session: LabSessionApi | null = null;
  private helloPending = false;
  private activity: 'run' | 'grade' | null = null;
  private droppedOutput = 0;
  private refused = 0;
  private disposed: Promise<void> | null = null;
  /** Set while this connection's grade waits in the queue: leaves the queue. */
  private cancelQueued: (() => void) | null = null;
  private stopWhileQueued = false;

  constructor(
    readonly socket: WebSocket,
    private readonly deps: ConnectionDeps,
  ) {}

  async receive(data: RawData, isBinary: boolean): Promise<void> {
    try {
      if (!this.deps.rate.take()) {
        // A flood is not answered one by one: after a burst of refusals the socket closes.
        if (++this.refused > 100) this.socket.close(1008, 'Too many messages');
        throw new KafkaIqError('LIMIT_EXCEEDED', 'Too many messages: slow down (at most a few per second).');
      }
      if (isBinary) throw new KafkaIqError('INVALID_INPUT', 'Send messages as JSON text frames, not binary');
      let json: unknown;
      try {
        json = JSON.parse(rawText(data));
      } catch (err) {
        throw new KafkaIqError('INVALID_INPUT', `Message is not valid JSON: ${describeError(err)}`);
      }
      const message = parseWithFriendlyErrors(clientMessageSchema, json, 'Invalid message');
      await this.handle(message);
    } catch (err) {
      this.sendError(err);
    }
  }

  /** Stops whatever the session runs; safe to call more than once. */
  dispose(): Promise<void> {
    this.disposed ??= (async () => {
      const { session, sessionId } = this;
      this.session = null;
      this.cancelQueued?.();
      if (sessionId) this.deps.releaseSession(sessionId, this);
      if (session) await session.dispose().catch((err) => this.deps.log(`session ${sessionId} dispose failed: ${describeError(err)}`));
    })();
    return this.disposed;
  }

  private async handle(message: ClientMessage): Promise<void> {
    if (message.type === 'hello') return this.hello(message.sessionId);
    const session = this.session;
    if (!session) {
      throw new KafkaIqError('INVALID_INPUT', `Say hello first: send {"type":"hello","protocol":${PROTOCOL_VERSION},"sessionId":"…"} and wait for "welcome"`);
    }
    switch (message.type) {
      case 'run':
        return this.exclusive('run', () => session.run(message.lab, message.code));
      case 'grade':
        return this.exclusive('grade', async () => {
          const slot = this.deps.grades.acquire((position) => this.send({ type: 'queue', position }));
          this.cancelQueued = slot.cancel;
          const release = await slot.admitted;
          this.cancelQueued = null;
          try {
            // The learner left (or pressed Stop) while waiting: give the slot on.
            if (this.disposed || this.stopWhileQueued) return;
            // Recorded while it runs: if this server dies, the learner's next hello anywhere says so.
            const inFlight = await this.deps.inFlight.start(this.requireSessionId(), { lab: message.lab, quick: message.quick, seed: message.seed ?? null });
            try {
              const report = await session.grade(message.lab, message.code, { quick: message.quick, seed: message.seed });
              await this.finishGrade(report, message.code);
            } finally {
              await this.deps.inFlight.end(inFlight);
            }
          } finally {
            this.stopWhileQueued = false;
            release();
          }
        });
      case 'stop':
        if (this.cancelQueued) {
          this.stopWhileQueued = true;
          this.cancelQueued();
          this.cancelQueued = null;
          return;
        }
        return session.stop();
      case 'fault':
        if (message.kind === 'broker-restart' && !this.deps.cluster.brokerFaults) {
          throw new KafkaIqError('INVALID_INPUT', 'Broker restarts are not available: the lab server uses an external cluster');
        }
        return session.fault(message.kind, message.instance);
      case 'inspect': {
        const result = await session.inspect(message.command);
        return this.send({ type: 'inspect-result', result });
      }
      case 'history':
        return this.send({ type: 'history', ...(message.lab === undefined ? {} : { lab: message.lab }), ...(await this.deps.store.history(this.requireSessionId(), message.lab)) });
      case 'attempt': {
        const attempt = await this.deps.store.attempt(this.requireSessionId(), message.id);
        if (!attempt) throw new KafkaIqError('INVALID_INPUT', `No attempt ${message.id} in your history (see history).`);
        return this.send({ type: 'attempt', ...attempt });
      }
      case 'solution': {
        // Read first: a lab without a solution in that client must not record a reveal.
        const code = await readReferenceSolution(message.lab, message.client);
        const reveal = await this.deps.store.recordReveal(this.requireSessionId(), message.lab);
        if (reveal === 'no-grade') {
          throw new KafkaIqError('INVALID_INPUT', 'The reference solution is shown after you have graded your own program in this lab: press Grade first.');
        }
        return this.send({ type: 'solution', lab: message.lab, client: message.client, code, reveal });
      }
    }
  }

  /** The broker's health changed: tell this learner (only after welcome, as every message). */
  brokerState(state: BrokerHealthState, detail: string): void {
    if (this.session) this.send({ type: 'broker', state, detail });
  }

  private async hello(offered: string): Promise<void> {
    if (this.session || this.helloPending) throw new KafkaIqError('INVALID_INPUT', 'This connection already said hello');
    this.helloPending = true;
    try {
      const sessionId = await this.deps.resolveLearner(offered);
      // A grade of this learner whose server died becomes an attempt with the verdict error.
      await bestEffort('look for grades abandoned by a stopped server', () => this.deps.store.reapAbandonedGrades(sessionId, ABANDONED_AFTER_MS), this.deps.log);
      const previous = this.deps.claimSession(sessionId, this);
      this.sessionId = sessionId;
      if (previous) {
        // The same learner opened the lab in another tab (or reconnected before the old socket
        // timed out): one namespace cannot serve two programs, so the newest tab wins.
        previous.socket.close(CLOSE_SESSION_TAKEN_OVER, 'This lab session was opened in another tab');
        await previous.dispose();
      }
      if (this.disposed) return;
      this.session = this.deps.createSession({ sessionId, listener: this.listener() });
      const { brokers, brokerFaults, health, unsandboxed } = this.deps.cluster;
      this.send({ type: 'welcome', protocol: PROTOCOL_VERSION, sessionId, brokers, brokerFaults, broker: health?.state() ?? 'up', unsandboxed: unsandboxed ?? null });
    } finally {
      this.helloPending = false;
    }
  }

  /** A run and a grade each hold the session until they end; anything else meanwhile is BUSY. */
  private async exclusive(kind: 'run' | 'grade', work: () => Promise<void>): Promise<void> {
    if (this.activity) {
      throw new KafkaIqError('BUSY', `A ${this.activity} is already active: stop it first (Stop button or \`stop\`)`);
    }
    // Counted per learner from here, a grade's wait in the queue included.
    const release = this.deps.quotas.take(this.deps.learner, kind);
    this.activity = kind;
    try {
      await work();
    } finally {
      this.activity = null;
      release();
    }
  }

  private async finishGrade(full: GradeReport, code: string): Promise<void> {
    const report = boundReport(full);
    const sessionId = this.requireSessionId();
    try {
      await this.deps.store.save(sessionId, report, code);
    } catch (err) {
      // The learner still gets the report; only the history misses it.
      this.deps.log(`could not save the attempt of ${sessionId}: ${describeError(err)}`);
    }
    this.send({ type: 'report', report });
    try {
      this.send({ type: 'history', ...(await this.deps.store.history(sessionId)) });
    } catch (err) {
      this.deps.log(`could not read the history of ${sessionId}: ${describeError(err)}`);
    }
  }

  private listener(): SessionListener {
    return {
      output: (instance, stream, line) => this.sendOutput(instance, stream, line),
      diagnostics: (diagnostics) => this.send({ type: 'diagnostics', diagnostics }),
      progress: (progress) => this.send({ type: 'progress', ...progress }),
      state: (state) => this.send({ type: 'state', ...state }),
      fault: (fault) => this.send({ type: 'fault', fault }),
    };
  }

  /** A chatty program must not fill the server's memory: output waits for a slow browser by being dropped. */
  private sendOutput(instance: string, stream: 'stdout' | 'stderr' | 'system', line: string): void {
    if (this.socket.bufferedAmount > OUTPUT_BACKLOG_LIMIT) {
      this.droppedOutput++;
      return;
    }
    if (this.droppedOutput > 0) {
      const dropped = this.droppedOutput;
      this.droppedOutput = 0;
      this.send({ type: 'output', instance: 'grader', stream: 'system', line: `${dropped} output lines dropped: the program printed faster than the browser could show` });
    }
    const clipped = line.length > MAX_OUTPUT_LINE ? `${line.slice(0, MAX_OUTPUT_LINE)}… (line cut at ${MAX_OUTPUT_LINE} characters)` : line;
    this.send({ type: 'output', instance, stream, line: clipped });
  }

  private requireSessionId(): string {
    if (!this.sessionId) throw new KafkaIqError('INTERNAL', 'No session id after hello');
    return this.sessionId;
  }

  private sendError(err: unknown): void {
    if (err instanceof KafkaIqError) {
      this.send({ type: 'error', code: err.code, message: err.message });
      return;
    }
    this.deps.log(`unexpected error in session ${this.sessionId ?? '(before hello)'}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    this.send({ type: 'error', code: 'INTERNAL', message: `Lab server error: ${describeError(err)}` });
  }

  private send(message: ServerMessage): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(JSON.stringify(message));
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}
