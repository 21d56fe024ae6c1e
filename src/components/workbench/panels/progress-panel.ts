/**
 * The grader's progress under the terminal: phase, records processed vs expected, faults fired
 * vs planned, and the time left as a bar. Hidden when nothing runs.
 */
import type { ProgressMessage } from '../../../shared/messages.ts';
import { h } from '../dom.ts';

export interface ProgressPanel {
  readonly element: HTMLElement;
  update(progress: ProgressMessage): void;
  hide(): void;
}

export function createProgressPanel(): ProgressPanel {
  const phase = h('span', { class: 'kiq-wb-progress__phase' });
  const records = h('progress', { class: 'kiq-wb-progress__records', max: 1, value: 0 });
  const recordsText = h('span', {});
  const faults = h('span', {});
  const time = h('progress', { class: 'kiq-wb-progress__time', max: 1, value: 1 });
  const timeText = h('span', {});
  const element = h(
    'div',
    { class: 'kiq-wb-progress', hidden: true },
    phase,
    h('label', { class: 'kiq-wb-progress__item' }, h('span', { class: 'kiq-sr-only' }, 'Records processed'), records, recordsText),
    faults,
    h('label', { class: 'kiq-wb-progress__item' }, h('span', { class: 'kiq-sr-only' }, 'Time left'), time, timeText),
  );
  return {
    element,
    update(p) {
      element.hidden = false;
      element.dataset.phase = p.phase;
      const mode = p.mode === 'quick' ? 'Quick grade' : p.mode === 'grade' ? 'Grade' : 'Run';
      phase.textContent = `${mode}: ${p.phase}`;
      records.max = Math.max(1, p.expected);
      records.value = Math.min(p.processed, records.max);
      recordsText.textContent = `${p.processed}/${p.expected} records`;
      faults.textContent = p.faultsPlanned > 0 ? `${p.faultsDone}/${p.faultsPlanned} faults` : '';
      const left = Math.max(0, p.limitMs - p.elapsedMs);
      time.max = Math.max(1, p.limitMs);
      time.value = left;
      timeText.textContent = `${Math.ceil(left / 1000)} s left`;
    },
    hide() {
      element.hidden = true;
    },
  };
}
