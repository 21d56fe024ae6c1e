/**
 * The learner's graded attempts of this lab, newest first, as the lab server keeps them (its
 * attempt store): verdict, plan, seed and time per attempt, and per attempt three actions: open its
 * report (report panel and terminal), load the program it graded into the editor, or diff that
 * program with the editor's. Below the list: the reference solution, offered once the lab has a
 * graded attempt, and the diff or solution last asked for.
 */
import type { AttemptSummary, SolutionReveal } from '../../../shared/messages.ts';
import type { DiffLine } from '../../../shared/line-diff.ts';
import { h } from '../dom.ts';

export interface HistoryActions {
  open(attempt: AttemptSummary): void;
  load(attempt: AttemptSummary): void;
  diff(attempt: AttemptSummary): void;
  revealSolution(): void;
}

export interface HistoryPanel {
  readonly element: HTMLElement;
  /** This lab's attempts (newest first) and the reveals of its reference solution. */
  update(attempts: readonly AttemptSummary[], reveals: readonly SolutionReveal[]): void;
  /** Shows a diff (unified, `-` the attempt's lines, `+` the editor's) under the list. */
  showDiff(title: string, lines: readonly DiffLine[] | null, hunks: readonly string[]): void;
  /** Shows the reference solution under the list, with a button that loads it into the editor. */
  showSolution(code: string, reveal: SolutionReveal, load: () => void): void;
}

const VERDICT: Record<AttemptSummary['verdict'], string> = { pass: 'Pass', fail: 'Fail', inconclusive: 'Inconclusive', error: 'Error' };

export function createHistoryPanel(actions: HistoryActions): HistoryPanel {
  const list = h('ol', { class: 'kiq-wb-history__list', reversed: true });
  const empty = h('p', { class: 'kiq-wb-history__empty' }, 'No graded attempt yet: each Grade is kept here with its report and the program it graded.');
  const revealButton = h('button', { type: 'button', class: 'kiq-wb-history__reveal', disabled: true }, 'Show the reference solution');
  const revealNote = h('p', { class: 'kiq-wb-history__note' }, 'The reference solution is offered after your first graded attempt.');
  revealButton.addEventListener('click', () => actions.revealSolution());
  const detail = h('div', { class: 'kiq-wb-history__detail', hidden: true });
  const element = h(
    'section',
    { class: 'kiq-wb-history' },
    h('h3', { class: 'kiq-wb-history__title' }, 'Your graded attempts'),
    empty,
    list,
    h('div', { class: 'kiq-wb-history__solution' }, revealButton, revealNote),
    detail,
  );
  // A heading id unique on the page (a lesson may embed two labs).
  const heading = element.querySelector('h3')!;
  heading.id = `kiq-wb-history-${Math.random().toString(36).slice(2, 10)}`;
  element.setAttribute('aria-labelledby', heading.id);

  function row(attempt: AttemptSummary): HTMLElement {
    const label = `attempt #${attempt.n}`;
    const when = new Date(attempt.at);
    const button = (text: string, what: string, action: () => void, enabled = true) => {
      const b = h('button', { type: 'button', 'aria-label': `${what} ${label}`, disabled: !enabled, title: enabled ? undefined : 'Only the newest attempts keep their program' }, text);
      b.addEventListener('click', action);
      return b;
    };
    return h(
      'li',
      { class: 'kiq-wb-history__item', 'data-attempt': attempt.id, 'data-verdict': attempt.verdict },
      h('span', { class: 'kiq-wb-history__n' }, `#${attempt.n}`),
      // Styled as the report's verdict badge, with a class of its own (the report's is the grade on screen).
      h('span', { class: 'kiq-wb-history__verdict', 'data-verdict': attempt.verdict }, VERDICT[attempt.verdict]),
      h('span', { class: 'kiq-wb-history__plan' }, `${attempt.quick ? 'quick' : 'full'} plan · seed ${attempt.seed}`),
      h('time', { datetime: attempt.at, class: 'kiq-wb-history__time' }, when.toLocaleString()),
      h(
        'span',
        { class: 'kiq-wb-history__actions' },
        // Each accessible name starts with the visible word, as speech input users say it.
        button('Report', 'Report of', () => actions.open(attempt)),
        button('Load', 'Load into the editor: the program of', () => actions.load(attempt), attempt.hasCode),
        button('Diff', 'Diff with your current code: the program of', () => actions.diff(attempt), attempt.hasCode),
      ),
    );
  }

  return {
    element,
    update(attempts, reveals) {
      list.replaceChildren(...attempts.map(row));
      empty.hidden = attempts.length > 0;
      list.hidden = attempts.length === 0;
      revealButton.disabled = attempts.length === 0;
      const first = reveals.at(-1);
      revealNote.textContent =
        attempts.length === 0
          ? 'The reference solution is offered after your first graded attempt.'
          : first
            ? `You were shown the reference solution on ${new Date(first.at).toLocaleString()}${first.beforePass ? ', before you passed this lab' : ', after you passed this lab'}.`
            : 'Revealing it is recorded in your history and in your instructor’s class view.';
    },
    showDiff(title, lines, hunks) {
      const body =
        lines === null
          ? h('p', {}, 'The program of that attempt and your current code are the same.')
          : h(
              'pre',
              { class: 'kiq-wb-diff', tabindex: 0, 'aria-label': title },
              ...hunks.map((text) => {
                const op = text.startsWith('@@') ? 'hunk' : text.startsWith('+') ? 'add' : text.startsWith('-') ? 'del' : 'keep';
                return h('span', { class: `kiq-wb-diff__${op}` }, `${text}\n`);
              }),
            );
      detail.replaceChildren(h('h4', {}, title), body);
      detail.hidden = false;
    },
    showSolution(code, reveal, load) {
      const loadButton = h('button', { type: 'button' }, 'Load the solution into the editor');
      loadButton.addEventListener('click', load);
      detail.replaceChildren(
        h('h4', {}, 'Reference solution'),
        h('p', {}, `Shown ${new Date(reveal.at).toLocaleString()}${reveal.beforePass ? ', before you passed this lab' : ''}. Loading it replaces your program (Ctrl+Z in the editor undoes it).`),
        loadButton,
        h('pre', { class: 'kiq-wb-solution', tabindex: 0, 'aria-label': 'Reference solution' }, code),
      );
      detail.hidden = false;
    },
  };
}
