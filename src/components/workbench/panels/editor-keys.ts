/**
 * The editor's keys, in one line above it: what Tab does right now (move the focus on, or indent)
 * and the key that switches it, and the Run and Grade chords. The editor's tab-focus mode is
 * otherwise invisible, and a keyboard user must know how to leave the editor before entering it.
 */
import { h } from '../dom.ts';
import { TAB_MODE_KEY } from '../editor/code-editor.ts';

export interface EditorKeys {
  readonly element: HTMLElement;
  setTabMovesFocus(moves: boolean): void;
}

const APPLE = /Mac|iPhone|iPad|iPod/i.test(navigator.platform);
const MOD = APPLE ? '⌘' : 'Ctrl';

export function createEditorKeys(): EditorKeys {
  const tabState = h('span', {});
  const element = h(
    'p',
    { class: 'kiq-wb-keys' },
    h('span', {}, 'Editor keys: '),
    tabState,
    ' · ',
    h('kbd', {}, `${MOD}+Enter`),
    ' runs · ',
    h('kbd', {}, `${MOD}+Shift+Enter`),
    ' grades',
  );
  const setTabMovesFocus = (moves: boolean) => {
    tabState.replaceChildren(
      h('kbd', {}, 'Tab'),
      moves ? ' moves on to the next control (' : ' indents (',
      h('kbd', {}, TAB_MODE_KEY),
      moves ? ' to indent with it)' : ' to move on with it)',
    );
    element.dataset.tab = moves ? 'moves-focus' : 'indents';
  };
  setTabMovesFocus(true);
  return { element, setTabMovesFocus };
}
