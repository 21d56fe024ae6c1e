/**
 * The learner's program: a Monaco TypeScript editor that starts with their saved code (or the
 * lab's starter) and saves as they type.
 */
import type { KafkaClient } from '../../../shared/clients.ts';
import { codeSlot, savedCode, saveCode } from '../storage.ts';
import type { ThemeName } from '../theme.ts';
import { loadClientTypes, setupMonaco } from './monaco-setup.ts';

const SAVE_DELAY_MS = 400;
/** Each editor gets its own model file, so two workbenches of one lab on a page do not collide. */
let modelCounter = 0;

export interface CodeEditor {
  getCode(): string;
  /** Replaces the program with the starter and forgets the saved copy. */
  resetToStarter(): void;
  /** Saves this client's program and shows the other client's (saved, or its starter), with its types. */
  switchClient(client: KafkaClient, starter: string): void;
  setTheme(theme: ThemeName): void;
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
    fixedOverflowWidgets: true,
    ariaLabel: options.label,
    // Screen reader users and keyboard users need Tab to leave the editor: Ctrl+M toggles it.
    tabFocusMode: false,
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
    focus: () => editor.focus(),
    dispose() {
      saveNow();
      window.removeEventListener('pagehide', saveNow);
      changes.dispose();
      editor.dispose();
      model.dispose();
    },
  };
}

function monacoTheme(theme: ThemeName) {
  return theme === 'light' ? 'vs' : 'vs-dark';
}
