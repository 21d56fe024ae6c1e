/**
 * Monaco's tab-focus switch (esm/vs/editor/browser/config/tabFocus.js), which ships without a
 * declaration. One per page: true, Tab and Shift+Tab move the focus out of every editor; false,
 * they indent. Ctrl+M (Ctrl+Shift+M on macOS) toggles it.
 */
declare module 'monaco-editor/editor/browser/config/tabFocus' {
  export const TabFocus: {
    getTabFocusMode(): boolean;
    setTabFocusMode(tabFocusMode: boolean): void;
    onDidChangeTabFocus(listener: (tabFocusMode: boolean) => void): { dispose(): void };
  };
}
