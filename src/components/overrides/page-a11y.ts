/**
 * Two fixes every page needs once it is in the browser (loaded by SkipLink.astro, which every
 * page renders):
 *  - A code sample or table wider than the column scrolls sideways; a keyboard user can scroll
 *    it only if it can take the focus. Such a region gets tabindex=0 and a name while (and only
 *    while) it overflows.
 *  - The search button's visible shortcut hint (Ctrl K) is not part of its name "Search"; the
 *    shortcut is announced through aria-keyshortcuts, so the hint is hidden from assistive
 *    technology and the visible label and the name match.
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
  for (const hint of document.querySelectorAll('site-search button[data-open-modal] > kbd')) hint.setAttribute('aria-hidden', 'true');
}
