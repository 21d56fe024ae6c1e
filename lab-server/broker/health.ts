/**
 * The broker's health as the workbench's connection badge shows it. A broker this process owns
 * reports its own (BrokerProcess supervises it: a node that dies is restarted with backoff); for a
 * broker another process owns, or an external cluster, the lab server asks it every few seconds.
 */
import type { BrokerHealthState } from './broker-process.ts';
import { isKafkaAt } from './probes.ts';

export type { BrokerHealthState } from './broker-process.ts';

export interface BrokerHealth {
  state(): BrokerHealthState;
  detail(): string;
  /** Returns the unsubscribe function. */
  subscribe(listener: (state: BrokerHealthState, detail: string) => void): () => void;
  close(): void;
}

export function pollHealth(brokers: string[], everyMs = 5_000): BrokerHealth {
  let state: BrokerHealthState = 'up';
  let detail = '';
  const listeners = new Set<(state: BrokerHealthState, detail: string) => void>();
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void isKafkaAt(brokers[0]!, 2_000)
      .then((up) => {
        const next: BrokerHealthState = up ? 'up' : 'down';
        if (next === state) return;
        state = next;
        detail = up ? 'answering again' : `no answer at ${brokers[0]}`;
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
