/**
 * The lab's hints (hints.md, rendered to HTML at build time). Nothing is shown until the learner
 * asks. The next hint is the next in order, except after a grade that failed a check some hidden
 * hint covers (hint-checks.ts): then it is that hint, offered right below the report, and labelled
 * with the check. A revealed hint is scrolled into view and takes the focus, so it appears where
 * the learner is and a screen reader reads it.
 */
import { h } from '../dom.ts';
import { declaredChecks, hintScore } from './hint-checks.ts';

export interface HintsPanel {
  readonly element: HTMLElement;
  readonly count: number;
  readonly shown: number;
  /** The failed check the next hint is for; null when the next hint is simply the next in order. */
  readonly nextFor: string | null;
  /** Reveals the next hint, scrolls it into view and focuses it. */
  showNext(): void;
  showAll(): void;
  /** After a grade: the checks it failed, in report order (empty when it passed). */
  afterGrade(failedChecks: string[]): void;
}

interface Hint {
  element: HTMLElement;
  index: number;
  declared: string[];
  text: string;
  title: string;
  revealed: boolean;
}

export function createHintsPanel(hintsHtml: string, onChange: () => void = () => {}): HintsPanel {
  const hints: Hint[] = splitIntoHints(hintsHtml).map((element, index) => ({
    element,
    index,
    declared: declaredChecks(element),
    text: element.textContent ?? '',
    title: element.querySelector('h2, strong')?.textContent ?? '',
    revealed: false,
  }));
  let suggestion: { hint: Hint; check: string } | null = null;
  const list = h('div', { class: 'kiq-wb-hints__list' });
  const offerText = h('span', {});
  const offerButton = h('button', { type: 'button', class: 'kiq-wb-btn' }, 'Show the hint');
  const offer = h('p', { class: 'kiq-wb-hints__offer', hidden: true }, offerText, ' ', offerButton);
  offerButton.addEventListener('click', () => showNext());
  const element = h('section', { class: 'kiq-wb-hints', hidden: true, 'aria-label': 'Hints' }, offer, list);
  const shownCount = () => hints.filter((hint) => hint.revealed).length;

  function refresh() {
    offer.hidden = suggestion === null;
    if (suggestion) {
      offerText.textContent = `The check ${suggestion.check} failed, and a hint you have not seen is about it.`;
      offerButton.textContent = `Show the hint for ${suggestion.check}`;
    }
    element.hidden = suggestion === null && shownCount() === 0;
  }

  function reveal(hint: Hint, forCheck?: string): void {
    hint.revealed = true;
    hint.element.classList.add('kiq-wb-hints__hint');
    hint.element.tabIndex = -1;
    hint.element.setAttribute('role', 'group');
    hint.element.setAttribute('aria-label', `Hint ${hint.index + 1} of ${hints.length}${forCheck ? `, for the failed check ${forCheck}` : ''}`);
    if (forCheck) hint.element.prepend(h('p', { class: 'kiq-wb-hints__for' }, 'For the failed check ', h('code', {}, forCheck), ':'));
    // In the order of hints.md, whichever order they were revealed in.
    const after = hints.slice(0, hint.index).reverse().find((other) => other.revealed && other.element.parentNode === list);
    if (after) after.element.after(hint.element);
    else list.prepend(hint.element);
  }

  function focusHint(hint: Hint) {
    hint.element.scrollIntoView({ block: 'nearest' });
    hint.element.focus({ preventScroll: true });
  }

  function showNext() {
    const hint = suggestion?.hint ?? hints.find((candidate) => !candidate.revealed);
    if (!hint) return;
    reveal(hint, suggestion?.check);
    suggestion = null;
    refresh();
    focusHint(hint);
    onChange();
  }

  return {
    element,
    count: hints.length,
    get shown() {
      return shownCount();
    },
    get nextFor() {
      return suggestion?.check ?? null;
    },
    showNext,
    showAll() {
      const first = hints.find((hint) => !hint.revealed);
      for (const hint of hints) if (!hint.revealed) reveal(hint);
      suggestion = null;
      refresh();
      if (first) focusHint(first);
      onChange();
    },
    afterGrade(failedChecks) {
      suggestion = null;
      for (const check of failedChecks) {
        const hidden = hints.filter((hint) => !hint.revealed);
        const named = hidden.find((hint) => hint.declared.includes(check));
        let best: Hint | undefined = named;
        // A lab that names its hints' checks is taken at its word: no guessing from the words then.
        if (!best && !hints.some((hint) => hint.declared.length)) {
          let bestScore = 0;
          for (const hint of hidden) {
            const score = hintScore(check, hint.text, hint.title);
            if (score > bestScore) [best, bestScore] = [hint, score];
          }
        }
        if (best) {
          suggestion = { hint: best, check };
          break;
        }
      }
      refresh();
      onChange();
    },
  };
}

/**
 * Groups the rendered markdown into hints. With `##` headings, each heading starts a hint.
 * Without, every item of a top-level list is a hint (numbering kept) and every other top-level
 * block is one, so a plain numbered hints.md still reveals step by step.
 */
function splitIntoHints(html: string): HTMLElement[] {
  const template = document.createElement('template');
  // Trusted: the lab author's own markdown, rendered by Astro at build time.
  template.innerHTML = html;
  const blocks = [...template.content.childNodes].filter((node) => node.nodeType !== Node.TEXT_NODE || node.textContent?.trim());
  const hints: HTMLElement[] = [];
  if (blocks.some((node) => node instanceof HTMLElement && node.tagName === 'H2')) {
    let current: HTMLElement | null = null;
    for (const node of blocks) {
      if (!current || (node instanceof HTMLElement && node.tagName === 'H2')) {
        current = h('div', {});
        hints.push(current);
      }
      current.append(node);
    }
    return hints;
  }
  for (const node of blocks) {
    // A `<!-- checks: ... -->` between two blocks belongs to the hint before it.
    if (node.nodeType === Node.COMMENT_NODE && hints.length) {
      hints.at(-1)!.append(node);
      continue;
    }
    if (node instanceof HTMLOListElement || node instanceof HTMLUListElement) {
      const first = node instanceof HTMLOListElement ? node.start : 1;
      [...node.children].forEach((item, i) => {
        const list = node instanceof HTMLOListElement ? h('ol', { start: first + i }) : h('ul', {});
        list.append(item);
        hints.push(h('div', {}, list));
      });
    } else {
      hints.push(h('div', {}, node));
    }
  }
  return hints;
}
