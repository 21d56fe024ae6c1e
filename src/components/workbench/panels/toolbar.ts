/**
 * The workbench buttons. They only call actions; which ones are enabled follows one state object
 * (connection, activity, instances), so the rules live in one place: `update`.
 */
import type { StateMessage } from '../../../shared/messages.ts';
import { CLIENT_INFO, KAFKA_CLIENTS, type KafkaClient } from '../../../shared/clients.ts';
import { h } from '../dom.ts';

type Instance = StateMessage['instances'][number];
export type ManualFaultKind = 'kill' | 'pause' | 'resume' | 'add-instance' | 'broker-restart';

export interface ToolbarActions {
  run(): void;
  grade(quick: boolean): void;
  stop(): void;
  fault(kind: ManualFaultKind, instance?: string): void;
  showHint(): void;
  showAllHints(): void;
  resetToStarter(): void;
  toggleExpanded(): boolean;
  pickClient(client: KafkaClient): void;
}

export interface ToolbarState {
  connected: boolean;
  brokerFaults: boolean;
  /** pending: a request was sent and the server has not answered yet. */
  activity: 'idle' | 'pending' | 'running' | 'grading';
  /** Another lab of this session is running (its own workbench controls it). */
  busyElsewhere: boolean;
  instances: Instance[];
  hintsShown: number;
  hintsTotal: number;
  /** The failed check the next hint is for (hints-panel.ts), if any. */
  hintFor: string | null;
}

export interface Toolbar {
  readonly element: HTMLElement;
  update(state: ToolbarState): void;
  /** When the expanded view was left another way (Escape). */
  setExpanded(expanded: boolean): void;
}

export function createToolbar(actions: ToolbarActions, client: KafkaClient): Toolbar {
  const button = (label: string, attributes: Record<string, string> = {}, onClick: () => void = () => {}) => {
    const element = h('button', { type: 'button', class: 'kiq-wb-btn', ...attributes }, label);
    element.addEventListener('click', onClick);
    return element;
  };

  const run = button('Run', { 'data-variant': 'primary', title: 'Run your program without faults (Ctrl+Enter)', 'aria-keyshortcuts': 'Control+Enter' }, actions.run);
  const grade = button('Grade', { title: 'Grade under the full fault plan (Ctrl+Shift+Enter)', 'aria-keyshortcuts': 'Control+Shift+Enter' }, () => actions.grade(false));
  const quick = button('Quick grade', { title: 'A shorter fault plan, for quick feedback' }, () => actions.grade(true));
  const stop = button('Stop', { 'data-variant': 'danger', title: 'Stop the run or the grade' }, actions.stop);

  const instanceSelect = h('select', { class: 'kiq-wb-select', 'aria-label': 'Instance the fault hits' });
  const selected = () => instanceSelect.value || undefined;
  let selectedState: Instance['state'] | undefined;
  const kill = button('Kill', { title: 'SIGKILL the instance; it restarts with the same identity' }, () => actions.fault('kill', selected()));
  const pause = button('Pause', { title: 'Freeze the instance (SIGSTOP), e.g. to make it a zombie' }, () => actions.fault(selectedState === 'paused' ? 'resume' : 'pause', selected()));
  const addInstance = button('Add instance', { title: 'Start one more instance: the group rebalances' }, () => actions.fault('add-instance'));
  const brokerRestart = button('Restart broker', { title: 'Stop every broker cleanly and start it again' }, () => actions.fault('broker-restart'));
  const faultGroup = h('div', { class: 'kiq-wb-toolbar__group', role: 'group', 'aria-label': 'Inject a fault while running' }, h('span', { class: 'kiq-wb-toolbar__label', 'aria-hidden': 'true' }, 'Faults'), instanceSelect, kill, pause, addInstance, brokerRestart);

  const hint = button('Show hint', { title: 'Reveal the next hint' }, actions.showHint);
  const allHints = button('All hints', { class: 'kiq-wb-btn kiq-wb-btn--quiet', title: 'Reveal every hint' }, actions.showAllHints);
  const reset = button('Reset to starter', { class: 'kiq-wb-btn kiq-wb-btn--quiet', title: 'Replace your program with the starter (undo with Ctrl+Z)' }, () => {
    if (window.confirm('Replace your program with the starter code? Undo (Ctrl+Z) in the editor brings it back.')) actions.resetToStarter();
  });
  // Which Kafka client the program is written with: its own starter, hints, types and saved program.
  const clientSelect = h(
    'select',
    { class: 'kiq-wb-select', 'aria-label': 'Kafka client of your program', title: 'Write the program with this client: the starter, hints and editor types follow' },
    ...KAFKA_CLIENTS.map((c) => h('option', { value: c }, CLIENT_INFO[c].label)),
  );
  clientSelect.value = client;
  clientSelect.addEventListener('change', () => actions.pickClient(clientSelect.value as KafkaClient));
  const expand = button('Expand', { class: 'kiq-wb-btn kiq-wb-btn--quiet', 'aria-pressed': 'false', title: 'Use the whole window (Escape to leave)' }, () =>
    setExpanded(actions.toggleExpanded()),
  );
  function setExpanded(expanded: boolean) {
    expand.setAttribute('aria-pressed', String(expanded));
    expand.textContent = expanded ? 'Collapse' : 'Expand';
  }

  const element = h(
    'div',
    { class: 'kiq-wb-toolbar', role: 'toolbar', 'aria-label': 'Lab actions' },
    h('div', { class: 'kiq-wb-toolbar__group', role: 'group', 'aria-label': 'Run and grade' }, run, grade, quick, stop),
    faultGroup,
    h('div', { class: 'kiq-wb-toolbar__group kiq-wb-toolbar__group--end', role: 'group', 'aria-label': 'Help and layout' }, clientSelect, hint, allHints, reset, expand),
  );

  let last: ToolbarState | null = null;
  /**
   * Focus follows the activity, never to the page top: a focused Run, Grade or Quick grade that
   * gets disabled hands the focus to Stop, and a focused Stop that gets disabled hands it back to
   * the button that started the activity (or to Run), as soon as that one is enabled again.
   */
  const activityButtons = [run, grade, quick];
  let returnTo: HTMLButtonElement | null = null;
  let focusLost = false;
  function keepFocus(focusedBefore: Element | null) {
    const active = document.activeElement;
    if (focusLost && (active === null || active === document.body || active === stop)) {
      const target = returnTo ?? run;
      if (!target.disabled) {
        target.focus();
        focusLost = false;
        returnTo = null;
      }
      return;
    }
    if (!(focusedBefore instanceof HTMLButtonElement) || !focusedBefore.disabled) return;
    focusLost = false;
    if (activityButtons.includes(focusedBefore)) {
      returnTo = focusedBefore;
      if (!stop.disabled) stop.focus();
      else focusLost = true;
    } else if (focusedBefore === stop) {
      const target = returnTo ?? run;
      if (!target.disabled) {
        target.focus();
        returnTo = null;
      } else focusLost = true;
    }
  }
  // Pause/Resume names what it will do to the instance picked here.
  instanceSelect.addEventListener('change', () => last && update(last));

  function update(state: ToolbarState) {
    last = state;
    const focusedBefore = document.activeElement;
    const idle = state.connected && state.activity === 'idle' && !state.busyElsewhere;
    const running = state.connected && state.activity === 'running';
    run.disabled = !idle;
    grade.disabled = !idle;
    quick.disabled = !idle;
    // Also while pending: if the server never confirms the start, Stop is the way out.
    stop.disabled = !(state.connected && state.activity !== 'idle');

    // Manual faults belong to Run mode: a grade injects its own, reproducibly.
    const live = state.instances.filter((i) => i.state !== 'exited');
    const previous = instanceSelect.value;
    instanceSelect.replaceChildren(...live.map((i) => h('option', { value: i.id }, `${i.id}${i.state === 'paused' ? ' (paused)' : ''}`)));
    if (live.some((i) => i.id === previous)) instanceSelect.value = previous;
    selectedState = live.find((i) => i.id === instanceSelect.value)?.state;
    instanceSelect.disabled = !running || live.length === 0;
    kill.disabled = !running || live.length === 0;
    pause.disabled = !running || live.length === 0;
    pause.textContent = selectedState === 'paused' ? 'Resume' : 'Pause';
    addInstance.disabled = !running;
    brokerRestart.disabled = !running || !state.brokerFaults;
    brokerRestart.title = state.brokerFaults ? 'Stop every broker cleanly and start it again' : 'Not available: the lab server uses an external cluster';
    faultGroup.dataset.active = String(running);

    // Switching clients swaps the program: not in the middle of a run or grade.
    clientSelect.disabled = state.activity !== 'idle';
    hint.hidden = state.hintsTotal === 0;
    allHints.hidden = state.hintsTotal === 0;
    hint.disabled = state.hintsShown >= state.hintsTotal;
    allHints.disabled = state.hintsShown >= state.hintsTotal;
    hint.textContent = state.hintFor
      ? `Show hint for ${state.hintFor}`
      : state.hintsShown >= state.hintsTotal
        ? 'All hints shown'
        : `Show hint ${state.hintsShown + 1}/${state.hintsTotal}`;
    hint.title = state.hintFor ? `Reveal the hint about ${state.hintFor}, the check your last grade failed` : 'Reveal the next hint';
    keepFocus(focusedBefore);
  }

  return { element, update, setExpanded };
}
