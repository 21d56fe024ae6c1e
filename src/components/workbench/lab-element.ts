/**
 * <kiq-lab>: the only workbench code a lesson loads up front (a few hundred bytes). It waits
 * until the lab scrolls near the viewport, then imports the workbench (Monaco, xterm...) and
 * mounts it. Astro's client:visible needs a UI framework; a custom element does the same job.
 */

import type { MountedWorkbench } from './workbench.ts';

class KiqLabElement extends HTMLElement {
  private observer: IntersectionObserver | null = null;
  private workbench: MountedWorkbench | null = null;

  /** Loads the workbench now if it has not loaded, and moves the focus into its terminal. */
  async focusTerminal(): Promise<void> {
    this.scrollIntoView({ block: 'start' });
    if (!this.workbench) {
      this.stopObserving();
      await (this.hydrating ??= this.hydrate());
    }
    this.workbench?.focusTerminal();
  }
  private hydrating: Promise<void> | null = null;

  /** The lab terminal's text, empty until the workbench has loaded. */
  get transcript(): string {
    return this.workbench?.transcript() ?? '';
  }

  /** The lab terminal's rows as shown, each marked when xterm wrapped it from the row above (for tests). */
  get terminalRows(): { text: string; wrapped: boolean }[] {
    return this.workbench?.terminalRows() ?? [];
  }
  private detached = false;

  connectedCallback() {
    this.detached = false;
    if (this.workbench || this.observer) return;
    this.observer = new IntersectionObserver(
      (entries) => {
        if (!entries.some((entry) => entry.isIntersecting)) return;
        this.stopObserving();
        this.hydrating ??= this.hydrate();
      },
      // Start loading a little before the lab is visible: Monaco takes a moment.
      { rootMargin: '300px 0px' },
    );
    this.observer.observe(this);
  }

  disconnectedCallback() {
    this.detached = true;
    this.hydrating = null;
    this.stopObserving();
    this.workbench?.dispose();
    this.workbench = null;
  }

  private stopObserving() {
    this.observer?.disconnect();
    this.observer = null;
  }

  private async hydrate() {
    const status = this.querySelector<HTMLElement>('[data-kiq-lab-status]');
    const mountPoint = this.querySelector<HTMLElement>('[data-kiq-lab-mount]');
    const data = this.querySelector('script[type="application/json"]')?.textContent;
    if (!mountPoint || !data) return;
    if (status) status.textContent = 'Loading the workbench…';
    try {
      const { mountWorkbench } = await import('./workbench.ts');
      if (this.detached) return;
      this.workbench = mountWorkbench(mountPoint, JSON.parse(data));
      this.dataset.state = 'ready';
    } catch (err) {
      console.error('[kafkaiq] the workbench failed to load', err);
      const message = `The workbench failed to load: ${err instanceof Error ? err.message : String(err)}. Reload the page to try again.`;
      if (status?.isConnected) status.textContent = message;
      else {
        // It failed half-way through mounting: replace the half-built workbench.
        const note = document.createElement('p');
        note.setAttribute('role', 'alert');
        note.textContent = message;
        mountPoint.replaceChildren(note);
      }
      this.dataset.state = 'failed';
    }
  }
}

if (!customElements.get('kiq-lab')) {
  customElements.define('kiq-lab', KiqLabElement);
  // The page's skip links (SkipLink.astro). Following a link to a fragment moves only where the
  // next Tab starts, not the focus: these move the focus to the lab, or into its terminal, which
  // exists only once the workbench has loaded, so that link loads it first.
  document.addEventListener('click', (event) => {
    const link = (event.target as Element | null)?.closest?.<HTMLAnchorElement>('a[data-kiq-lab], a[data-kiq-lab-terminal]');
    if (!link) return;
    const lab = document.getElementById(`lab-${link.dataset.kiqLab ?? link.dataset.kiqLabTerminal}`);
    if (!(lab instanceof KiqLabElement)) return;
    event.preventDefault();
    if (link.dataset.kiqLabTerminal) return void lab.focusTerminal();
    lab.scrollIntoView({ block: 'start' });
    lab.focus({ preventScroll: true });
  });
}
