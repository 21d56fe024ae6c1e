/**
 * The lab's environment contract beside the editor: every variable the program gets and what it
 * holds; once a run has started, also the real (namespaced) topic name behind each topic variable.
 */
import type { EnvVar } from '../../../shared/lab.ts';
import { h } from '../dom.ts';

export interface EnvPanel {
  readonly element: HTMLElement;
  showTopics(topics: Record<string, string>): void;
}

export function createEnvPanel(env: readonly EnvVar[]): EnvPanel {
  const values = new Map<string, HTMLElement>();
  const rows = env.map((variable) => {
    const value = h('code', { class: 'kiq-wb-env__value', hidden: true });
    values.set(variable.name, value);
    return h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('code', {}, variable.name)),
      h('td', {}, variable.description, value),
    );
  });
  const element = h(
    'details',
    { class: 'kiq-wb-env', open: true },
    h('summary', {}, 'Environment your program gets'),
    h('table', {}, h('caption', { class: 'kiq-sr-only' }, 'Environment variables of this lab'), h('tbody', {}, ...rows)),
  );
  return {
    element,
    showTopics(topics) {
      for (const [name, real] of Object.entries(topics)) {
        const value = values.get(name);
        if (!value) continue;
        value.textContent = real;
        value.hidden = false;
        value.title = `This run's topic behind ${name}`;
      }
    },
  };
}
