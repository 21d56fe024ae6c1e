/**
 * The lab's environment contract beside the editor: every variable the program gets and what it
 * holds; once a run has started, also the value behind each variable that names this run's
 * resources (the real, namespaced topic names, GROUP_ID, TRANSACTIONAL_ID). Below it, every client
 * setting the lab applies where the program sets none, with the client's own default beside it,
 * so nothing the lab changes about kafkajs or @platformatic/kafka is hidden.
 */
import type { EnvVar } from '../../../shared/lab.ts';
import type { InjectedClientSetting } from '../../../shared/lab-facts.ts';
import { h } from '../dom.ts';

export interface EnvPanel {
  readonly element: HTMLElement;
  /** Environment variable -> this run's real topic name. */
  showTopics(topics: Record<string, string>): void;
  /** Environment variable -> this run's value (GROUP_ID, TRANSACTIONAL_ID, ...). */
  showValues(values: Record<string, string>): void;
}

function settingsTable(settings: readonly InjectedClientSetting[]): HTMLElement {
  const rows = settings.map((s) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('code', {}, s.kafkajs)),
      h(
        'td',
        {},
        'This lab: ',
        h('code', { class: 'kiq-wb-env__setting' }, s.value),
        `. kafkajs default: ${s.kafkajsDefault}.`,
        s.about ? ` ${s.about[0]!.toUpperCase()}${s.about.slice(1)}.` : '',
        s.platformatic
          ? ` @platformatic/kafka: ${s.platformatic.option} (default ${s.platformatic.clientDefault}${s.platformatic.note ? `; ${s.platformatic.note}` : ''}).`
          : ' Not applied to @platformatic/kafka.',
      ),
    ),
  );
  return h(
    'table',
    { class: 'kiq-wb-env__settings' },
    h('caption', {}, 'Client settings this lab applies where your program sets none (in production the client default applies)'),
    h('tbody', {}, ...rows),
  );
}

export function createEnvPanel(env: readonly EnvVar[], settings: readonly InjectedClientSetting[] = []): EnvPanel {
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
    settings.length ? settingsTable(settings) : null,
  );
  const show = (entries: Record<string, string>, title: (name: string) => string) => {
    for (const [name, text] of Object.entries(entries)) {
      const value = values.get(name);
      if (!value) continue;
      value.textContent = text;
      value.hidden = false;
      value.title = title(name);
    }
  };
  return {
    element,
    showTopics: (topics) => show(topics, (name) => `This run's topic behind ${name}`),
    showValues: (entries) => show(entries, (name) => `This run's ${name}`),
  };
}
