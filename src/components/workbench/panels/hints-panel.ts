/**
 * The lab's hints (hints.md, rendered to HTML at build time): shown one at a time, or all at
 * once. Nothing is shown until the learner asks.
 */
import { h } from '../dom.ts';

export interface HintsPanel {
  readonly element: HTMLElement;
  readonly count: number;
  /** Reveals the next hint; returns how many are shown now. */
  showNext(): number;
  showAll(): void;
  readonly shown: number;
}

export function createHintsPanel(hintsHtml: string): HintsPanel {
  const sections = splitIntoHints(hintsHtml);
  let shown = 0;
  const list = h('div', { class: 'kiq-wb-hints__list' });
  const element = h('section', { class: 'kiq-wb-hints', hidden: true, 'aria-label': 'Hints', 'aria-live': 'polite' }, list);
  const reveal = (upTo: number) => {
    while (shown < Math.min(upTo, sections.length)) {
      const section = sections[shown]!;
      section.classList.add('kiq-wb-hints__hint');
      list.append(section);
      shown++;
    }
    element.hidden = shown === 0;
  };
  return {
    element,
    count: sections.length,
    get shown() {
      return shown;
    },
    showNext() {
      reveal(shown + 1);
      return shown;
    },
    showAll: () => reveal(sections.length),
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
