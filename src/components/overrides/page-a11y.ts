/**
 * Two fixes every page needs once it is in the browser (loaded by SkipLink.astro, which every
 * page renders):
 *  - A code sample or table wider than the column scrolls sideways; a keyboard user can scroll
 *    it only if it can take the focus. Such a region gets tabindex=0 and a name while (and only
 *    while) it overflows.
 *  - The search button shows "Search" and its shortcut (Ctrl K, or ⌘ K on Apple devices), but its
 *    name was "Search" alone: a speech user saying what they see did not match it. The name
 *    becomes "Search, Ctrl K" (not in parentheses, which checkers of label-in-name discount), and
 *    the label, the hint and its two keys get spaces between them (the built page has none, which
 *    made "courseCtrl" one word), so what is shown and what is named are the same words.
 */
const SCROLLERS = '.sl-markdown-content pre, .sl-markdown-content table';

function markScrollable(element: HTMLElement) {
  const scrolls = element.scrollWidth > element.clientWidth + 1;
  const marked = element.dataset.kiqScrollRegion === 'true';
  if (scrolls === marked) return;
  if (scrolls) {
    element.dataset.kiqScrollRegion = 'true';
    element.tabIndex = 0;
    // A table keeps its own role; a <pre> has none that takes a name.
    if (element.tagName === 'TABLE') element.setAttribute('aria-label', 'Table, scrolls sideways');
    else {
      element.setAttribute('role', 'group');
      element.setAttribute('aria-label', 'Code, scrolls sideways');
    }
  } else {
    delete element.dataset.kiqScrollRegion;
    element.removeAttribute('tabindex');
    element.removeAttribute('role');
    element.removeAttribute('aria-label');
  }
}

export function fixPage(): void {
  const regions = [...document.querySelectorAll<HTMLElement>(SCROLLERS)];
  const watch = new ResizeObserver((entries) => entries.forEach((entry) => markScrollable(entry.target as HTMLElement)));
  regions.forEach((region) => {
    markScrollable(region);
    watch.observe(region);
  });
  for (const button of document.querySelectorAll<HTMLButtonElement>('site-search button[data-open-modal]')) {
    const keys = [...button.querySelectorAll(':scope > kbd > kbd')];
    if (!keys.length) continue;
    const hint = keys[0]!.parentElement!;
    for (const element of [hint, ...keys.slice(1)]) {
      if (element.previousSibling?.nodeType !== Node.TEXT_NODE) element.before(' ');
    }
    const label = button.dataset.kiqLabel ?? button.getAttribute('aria-label') ?? 'Search';
    button.dataset.kiqLabel = label;
    button.setAttribute('aria-label', `${label}, ${keys.map((key) => key.textContent?.trim()).join(' ')}`);
  }
}
