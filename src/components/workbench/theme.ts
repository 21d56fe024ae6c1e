/** Follows Starlight's light/dark switch (`data-theme` on <html>), including later toggles. */
import type { Disposable } from './dom.ts';

export type ThemeName = 'light' | 'dark';

export function currentTheme(): ThemeName {
  return document.documentElement.dataset.theme === 'light' ? 'light' : 'dark';
}

export function watchTheme(onChange: (theme: ThemeName) => void): Disposable {
  let last = currentTheme();
  const observer = new MutationObserver(() => {
    const next = currentTheme();
    if (next === last) return;
    last = next;
    onChange(next);
  });
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  return { dispose: () => observer.disconnect() };
}
