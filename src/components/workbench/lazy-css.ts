/**
 * Stylesheets of the workbench, attached when the workbench code runs instead of being linked
 * by Astro. Astro links the CSS of everything a page's <script> can reach (dynamic imports
 * included) into the <head> of every page of the route, and Starlight renders all lessons with
 * one route: a normal CSS import would put Monaco's and xterm's CSS on every page of the site.
 * CSS imported with `?inline` is a string to Astro, so it stays in the lazily loaded chunk.
 */
const attached = new Set<string>();

export function attachCss(css: string): void {
  if (attached.has(css)) return;
  attached.add(css);
  const style = document.createElement('style');
  style.dataset.kafkaiqWorkbench = '';
  style.textContent = css;
  document.head.append(style);
}
