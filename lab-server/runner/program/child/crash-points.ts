/**
 * The crash-point machinery both Kafka client wrappers share (kafkajs-shim.ts and
 * platformatic-shim.ts): the IPC channel to the runner, the armed crash point, the checkpoint
 * that reports a call and holds it when armed, and the wrapper that puts a checkpoint before and
 * after an async client method.
 *
 * Each client's runtime is its own bundle, so a program that imports both clients would load this
 * module twice: the state lives on globalThis under one symbol, so there is still one armed crash
 * point, one IPC listener and one count of open transactions per process.
 */
import type { CrashPoint } from '../../../../src/shared/report.ts';
import { runnerChannel } from './channel.ts';
import { instrumentFetch } from './fetch-shim.ts';
import type { ArmAction, ChildEvent, InstrumentedOp, RunnerCommand } from './protocol.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface CrashPointState {
  armed: { point: CrashPoint; action: ArmAction; remaining: number; topic?: string; path?: string } | null;
  releasePaused: (() => void) | null;
  /** Kafka transactions open in this process, over every producer of either client. */
  openTransactions: number;
}

const STATE = Symbol.for('kafkaiq.crash-points');
const g = globalThis as Any;
const firstLoad = !g[STATE];
const state: CrashPointState = (g[STATE] ??= { armed: null, releasePaused: null, openTransactions: 0 });

// The runner's channel (channel.ts: a socket pair on fd 3, not Node's IPC), shared by every wrapper.
const channel = runnerChannel();
export const report = (event: ChildEvent) => channel?.send(event);

if (firstLoad && channel) {
  channel.onCommand((msg: RunnerCommand) => {
    if (msg.t === 'arm') {
      state.armed = { point: msg.point, action: msg.action, remaining: msg.occurrence, ...(msg.topic ? { topic: msg.topic } : {}), ...(msg.path ? { path: msg.path } : {}) };
    }
    else if (msg.t === 'disarm') state.armed = null;
    else if (msg.t === 'continue') {
      state.releasePaused?.();
      state.releasePaused = null;
    }
  });
}

/** The client's own kind of retriable error, thrown at a crash point armed with 'error'. */
export type InjectedError = () => Error;

/**
 * Reports a call at `point` and, when the runner armed that point, acts on it.
 * `written`: the topics this call writes (a send) or its transaction has written (offsets, commit,
 * abort), so a crash point aimed at one stage of a multi-stage program ignores the others. `path`:
 * an HTTP call's, so a crash point aimed at one call of the lab API ignores the others.
 */
export async function checkpoint(point: CrashPoint, txnOpen: boolean, injected: InjectedError, records?: number, written?: ReadonlySet<string>, path?: string): Promise<void> {
  report({ t: 'call', point, txnOpen, records, ...(point === 'after:commit' && written ? { written: [...written] } : {}) });
  const armed = state.armed;
  if (!armed || armed.point !== point) return;
  if (armed.topic && !written?.has(armed.topic)) return;
  if (armed.path && path !== armed.path) return;
  if (--armed.remaining > 0) return;
  const { action } = armed;
  state.armed = null;
  report({ t: 'hit', point, action, txnOpen });
  if (action === 'error') throw injected();
  if (action === 'kill') await new Promise(() => {}); // the runner sends SIGKILL
  if (action === 'pause') await new Promise<void>((resolve) => (state.releasePaused = resolve));
}

export interface InstrumentOptions {
  op: InstrumentedOp;
  txnOpen: () => boolean;
  injected: InjectedError;
  /** Called when the call has ended (ok: it resolved). */
  after?: (ok: boolean) => void;
  written?: (args: Any[]) => ReadonlySet<string>;
  records?: (args: Any[]) => number | undefined;
  /** A call the wrapper must let through unreported (e.g. a client calling itself). */
  passThrough?: (args: Any[]) => boolean;
  /** The method takes a trailing node-style callback instead of returning a promise, when given one. */
  callbackStyle?: boolean;
}

/** Puts before:<op> and after:<op> checkpoints around target[method] (an async method). */
export function instrument(target: Any, method: string, o: InstrumentOptions): void {
  const original = target[method];
  if (typeof original !== 'function') return;
  const run = async (args: Any[]) => {
    const records = o.records?.(args);
    const topics = o.written?.(args);
    await checkpoint(`before:${o.op}` as CrashPoint, o.txnOpen(), o.injected, records, topics);
    let result;
    try {
      result = await original.apply(target, args);
    } catch (err) {
      o.after?.(false);
      report({ t: 'failed', op: o.op, txnOpen: o.txnOpen(), error: String((err as Error)?.message ?? err).slice(0, 300) });
      throw err;
    }
    o.after?.(true);
    await checkpoint(`after:${o.op}` as CrashPoint, o.txnOpen(), o.injected, records, topics);
    return result;
  };
  target[method] = (...args: Any[]) => {
    if (o.passThrough?.(args)) return original.apply(target, args);
    const callback = o.callbackStyle && typeof args.at(-1) === 'function' ? args.pop() : null;
    const done = run(args);
    if (!callback) return done;
    done.then((result) => callback(null, result), (err) => callback(err));
  };
}

/** Counts a transaction as open in the process (for the HTTP crash points' txnOpen). */
export const transactionOpened = () => void state.openTransactions++;
export const transactionClosed = () => void state.openTransactions--;

// HTTP calls (fetch) get crash points too: before:http, after:http. Once per process (fetch-shim
// marks the wrapped fetch); an injected error there is a plain network failure.
instrumentFetch(
  (point, txnOpen, path) => checkpoint(point, txnOpen, () => new TypeError('fetch failed (injected by the grader)'), undefined, undefined, path),
  () => state.openTransactions > 0,
);
