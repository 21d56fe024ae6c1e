// Pagefind's UI ships no types; the lazy stand-in only needs its constructor.
declare module '@pagefind/default-ui/npm_dist/mjs/ui-core.mjs' {
  export class PagefindUI {
    constructor(options: Record<string, unknown>);
  }
}
