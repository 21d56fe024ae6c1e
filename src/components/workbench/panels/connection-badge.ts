/** Shows the state of the connection to the lab server, in words (and colour). */
import type { ConnectionState } from '../connection.ts';
import { h } from '../dom.ts';

export interface ConnectionBadge {
  readonly element: HTMLElement;
  update(state: ConnectionState): void;
}

export function createConnectionBadge(onReconnect: () => void): ConnectionBadge {
  const text = h('span', {});
  const retry = h('button', { type: 'button', class: 'kiq-wb-link', hidden: true }, 'Reconnect');
  retry.addEventListener('click', onReconnect);
  const element = h('span', { class: 'kiq-wb-conn', role: 'status', 'data-state': 'connecting' }, h('span', { class: 'kiq-wb-conn__dot', 'aria-hidden': 'true' }), text, retry);
  return {
    element,
    update(state) {
      element.dataset.state = state.kind === 'open' && state.broker !== 'up' ? 'waiting' : state.kind;
      retry.hidden = state.kind === 'open' || state.kind === 'connecting';
      switch (state.kind) {
        case 'connecting':
          text.textContent = state.attempt > 1 ? `Connecting to the lab server (try ${state.attempt})…` : 'Connecting to the lab server…';
          break;
        case 'open':
          text.textContent =
            state.broker === 'up'
              ? `Connected · broker ${state.brokers}`
              : state.broker === 'restarting'
                ? `Connected · broker ${state.brokers} is restarting${state.brokerDetail ? ` (${state.brokerDetail})` : ''}…`
                : `Connected · broker ${state.brokers} is down${state.brokerDetail ? ` (${state.brokerDetail})` : ''}`;
          if (state.unsandboxed) text.textContent += ` · ⚠ ${state.unsandboxed}`;
          element.title = state.unsandboxed ?? '';
          break;
        case 'waiting':
          text.textContent = `Offline: ${state.reason}; retrying in ${Math.round(state.retryInMs / 1000)} s`;
          break;
        case 'taken-over':
          text.textContent = 'This lab is open in another tab';
          break;
      }
    },
  };
}
