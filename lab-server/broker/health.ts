/**
 * The broker's health as the workbench's connection badge shows it. A broker this process owns
 * reports its own (BrokerProcess supervises it: a node that dies is restarted with backoff); for a
 * broker another process owns, or an external cluster, the lab server asks it every few seconds
 * with a real request (a metadata request, answered within HEALTH_DEADLINE_MS, or "down").
 */
import { answersWithin, HEALTH_DEADLINE_MS } from './probes.ts';

/** up: serving; restarting: a node died and is being started again; down: it could not be. */
export type BrokerHealthState = 'up' | 'restarting' | 'down';

export interface BrokerHealth {
  state(): BrokerHealthState;
  detail(): string;
  /** Returns the unsubscribe function. */
  subscribe(listener: (state: BrokerHealthState, detail: string) => void): () => void;
  close(): void;
}

export function pollHealth(brokers: string[], everyMs = 5_000, deadlineMs = HEALTH_DEADLINE_MS): BrokerHealth {
  let state: BrokerHealthState = 'up';
  let detail = '';
  const listeners = new Set<(state: BrokerHealthState, detail: string) => void>();
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void answersWithin(brokers[0]!, deadlineMs)
      .then((answer) => {
        const next: BrokerHealthState = answer.ok ? 'up' : 'down';
        if (next === state) return;
        state = next;
        detail = answer.ok ? 'answering again' : `${brokers[0]}: ${answer.reason}`;
        for (const l of listeners) l(state, detail);
      })
      .finally(() => (busy = false));
  }, everyMs);
  timer.unref();
  return {
    state: () => state,
    detail: () => detail,
    subscribe: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    close: () => clearInterval(timer),
  };
}
