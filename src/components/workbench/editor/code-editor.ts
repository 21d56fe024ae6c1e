/**
 * The learner's program: a Monaco TypeScript editor that starts with their saved code (or the
 * lab's starter) and saves as they type.
 *
 * Tab never traps the keyboard: entered from the keyboard, the editor is in Monaco's tab-focus
 * mode (Tab and Shift+Tab move on to the next control); clicked into, Tab indents. Ctrl+M
 * (Ctrl+Shift+M on macOS) switches between the two at any time, and the workbench shows which is on.
 */
import { TabFocus } from 'monaco-editor/editor/browser/config/tabFocus';
import type { KafkaClient } from '../../../shared/clients.ts';
import { codeSlot, savedCode, saveCode } from '../storage.ts';
import type { ThemeName } from '../theme.ts';
import { DARK_THEME, loadClientTypes, setupMonaco } from './monaco-setup.ts';

const SAVE_DELAY_MS = 400;
/** Each editor gets its own model file, so two workbenches of one lab on a page do not collide. */
let modelCounter = 0;

export interface CodeEditor {
  getCode(): string;
  /** Replaces the program with the starter and forgets the saved copy. */
  resetToStarter(): void;
  /** Replaces the program (an attempt's, the reference solution) as one edit that Ctrl+Z undoes, and saves it. */
  replaceCode(code: string): void;
  /** Saves this client's program and shows the other client's (saved, or its starter), with its types. */
  switchClient(client: KafkaClient, starter: string): void;
  setTheme(theme: ThemeName): void;
  /** Calls back with whether Tab moves the focus (true) or indents (false), now and on every change. */
  onTabMovesFocus(listener: (moves: boolean) => void): { dispose(): void };
  /** Binds a key chord (e.g. Ctrl+Enter) inside the editor. */
  addShortcut(keys: 'run' | 'grade', action: () => void): void;
  focus(): void;
  dispose(): void;
}

export function createCodeEditor(
  container: HTMLElement,
  options: { labId: string; starter: string; client: KafkaClient; theme: ThemeName; label: string },
): CodeEditor {
  const monaco = setupMonaco();
  // Until a pointer says otherwise, the editor is entered from the keyboard: Tab moves on.
  if (!document.querySelector('.monaco-editor.focused')) TabFocus.setTabFocusMode(true);
  const { labId } = options;
  let { starter } = options;
  let slot = codeSlot(labId, options.client);
  // Diagnostics for the other client's imports appear once its types have arrived.
  void loadClientTypes(options.client);
  const uri = monaco.Uri.parse(`file:///workbench-${++modelCounter}/${labId}.ts`);
  const model = monaco.editor.createModel(savedCode(slot) ?? starter, 'typescript', uri);
  const editor = monaco.editor.create(container, {
    model,
    theme: monacoTheme(options.theme),
    automaticLayout: true,
    minimap: { enabled: false },
    fontSize: 13,
    scrollBeyondLastLine: false,
    tabSize: 2,
    // In a lesson's column the editor shows about 80 columns: long lines wrap (indented under
    // their start) instead of running off the edge.
    wordWrap: 'on',
    wrappingIndent: 'indent',
    fixedOverflowWidgets: true,
    ariaLabel: `${options.label}. ${TAB_KEY_HELP}`,
  });

  // Keyboard or pointer: whichever reached the editor decides what Tab does until it is left.
  let pointerEntry = false;
  const onPointerDown = () => {
    if (!editor.hasWidgetFocus()) pointerEntry = true;
  };
  container.addEventListener('pointerdown', onPointerDown, true);
  const focusWatch = editor.onDidFocusEditorWidget(() => {
    TabFocus.setTabFocusMode(!pointerEntry);
  });
  const blurWatch = editor.onDidBlurEditorWidget(() => {
    pointerEntry = false;
  });

  let saveTimer: ReturnType<typeof setTimeout> | undefined;
  const saveNow = () => {
    clearTimeout(saveTimer);
    const code = model.getValue();
    // Code equal to the starter is not "the learner's": a later starter update then reaches them.
    saveCode(slot, code === starter ? null : code);
  };
  const changes = model.onDidChangeContent(() => {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(saveNow, SAVE_DELAY_MS);
  });
  // Keystrokes typed just before leaving the page must not be lost to the debounce.
  window.addEventListener('pagehide', saveNow);

  return {
    getCode: () => model.getValue(),
    resetToStarter() {
      // pushEditOperations keeps the reset undoable (Ctrl+Z brings the learner's code back).
      model.pushEditOperations([], [{ range: model.getFullModelRange(), text: starter }], () => null);
      saveNow();
    },
    replaceCode(code) {
      model.pushEditOperations([], [{ range: model.getFullModelRange(), text: code }], () => null);
      saveNow();
    },
    switchClient(client, clientStarter) {
      saveNow();
      slot = codeSlot(labId, client);
      starter = clientStarter;
      void loadClientTypes(client);
      model.setValue(savedCode(slot) ?? starter);
    },
    setTheme: (theme) => monaco.editor.setTheme(monacoTheme(theme)),
    addShortcut(keys, action) {
      const chord = keys === 'run' ? monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter : monaco.KeyMod.CtrlCmd | monaco.KeyMod.Shift | monaco.KeyCode.Enter;
      editor.addCommand(chord, action);
    },
    onTabMovesFocus(listener) {
      listener(TabFocus.getTabFocusMode());
      return TabFocus.onDidChangeTabFocus(listener);
    },
    focus: () => editor.focus(),
    dispose() {
      saveNow();
      container.removeEventListener('pointerdown', onPointerDown, true);
      focusWatch.dispose();
      blurWatch.dispose();
      window.removeEventListener('pagehide', saveNow);
      changes.dispose();
      editor.dispose();
      model.dispose();
    },
  };
}

const APPLE = typeof navigator !== 'undefined' && /Mac|iPhone|iPad|iPod/i.test(navigator.platform);
/** The key that switches Tab between moving the focus and indenting (Monaco's own binding). */
export const TAB_MODE_KEY = APPLE ? 'Ctrl+Shift+M' : 'Ctrl+M';
const TAB_KEY_HELP = `${TAB_MODE_KEY} switches Tab between moving the focus and indenting.`;

function monacoTheme(theme: ThemeName) {
  return theme === 'light' ? 'vs' : DARK_THEME;
}
