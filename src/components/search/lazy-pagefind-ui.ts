/**
 * Stands in for `@pagefind/default-ui` (aliased in astro.config.mjs). Starlight's search creates
 * Pagefind's UI as soon as a page goes idle, which put 92 KB of JavaScript on every lesson before
 * anyone searched. This class takes the same options but builds the real UI only when the search
 * dialog first opens (or the pointer/focus reaches the search button, to hide the load), so a
 * lesson page ships a few hundred bytes for search instead.
 */
type PagefindOptions = { element: string } & Record<string, unknown>;

export class PagefindUI {
  constructor(options: PagefindOptions) {
    const host = document.querySelector(options.element);
    const dialog = host?.closest('dialog');
    const opener = document.querySelector<HTMLButtonElement>('site-search button[data-open-modal]');
    if (!host || !dialog) return;
    let loading: Promise<void> | undefined;
    const load = () =>
      (loading ??= import('@pagefind/default-ui/npm_dist/mjs/ui-core.mjs').then(({ PagefindUI: RealUI }) => {
        new RealUI(options);
        // Starlight focuses the input when the dialog opens; on the first open it did not exist yet.
        if (dialog.open) host.querySelector('input')?.focus();
      }));
    new MutationObserver(() => dialog.open && void load()).observe(dialog, { attributes: true, attributeFilter: ['open'] });
    // Starlight builds the UI when the page first goes idle; on a busy page the dialog may be open by then.
    if (dialog.open) void load();
    for (const event of ['pointerenter', 'focus']) opener?.addEventListener(event, () => void load(), { once: true });
  }
}
