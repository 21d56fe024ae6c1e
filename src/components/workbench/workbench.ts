/**
 * The lab workbench: composes the editor, terminal, toolbar and panels for one lab, and turns
 * button presses and terminal commands into protocol messages and server messages back into
 * what the learner sees. Loaded on demand by <kiq-lab> (lab-element.ts).
 */
import workbenchCss from './workbench.css?inline';
import xtermCss from '@xterm/xterm/css/xterm.css?inline';
import { MAX_CODE_BYTES, type ServerMessage, type StateMessage } from '../../shared/messages.ts';
import { describeError } from '../../shared/errors.ts';
import { parseWithFriendlyErrors } from '../../shared/validate.ts';
import { acquireConnection, type ConnectionState, type ConnectionSubscriber, type OutgoingMessage } from './connection.ts';
import { h, type Disposable } from './dom.ts';
import { createCodeEditor } from './editor/code-editor.ts';
import { createConnectionBadge } from './panels/connection-badge.ts';
import { createEditorKeys } from './panels/editor-keys.ts';
import { createEnvPanel } from './panels/env-panel.ts';
import { createHintsPanel } from './panels/hints-panel.ts';
import { createHistoryPanel } from './panels/history-panel.ts';
import { createProgressPanel } from './panels/progress-panel.ts';
import { createReportPanel, verdictSentence } from './panels/report-panel.ts';
import { createToolbar, type ManualFaultKind, type ToolbarState } from './panels/toolbar.ts';
import { workbenchPayloadSchema } from './payload.ts';
import { recordPasses, savedClient, saveClient } from './storage.ts';
import { createAttemptHistory } from './attempt-history.ts';
import { CLIENT_INFO, type KafkaClient } from '../../shared/clients.ts';
import { injectedClientSettings } from '../../shared/lab-facts.ts';
import { ansi } from './terminal/ansi.ts';
import { HELP_LINES, parseCommand, resolveTopic, type Command } from './terminal/commands.ts';
import { formatDiagnostics, formatFault, formatPhase } from './terminal/format-events.ts';
import { formatInspectResult } from './terminal/format-inspect.ts';
import { showControlCharacters } from '../../shared/sanitise.ts';
import { formatReport } from './terminal/format-report.ts';
import { createTerminalView } from './terminal/terminal-view.ts';
import { currentTheme, watchTheme } from './theme.ts';
import { attachCss } from './lazy-css.ts';

// Not plain CSS imports: Astro would link them into every lesson (see lazy-css.ts).
attachCss(xtermCss);
attachCss(workbenchCss);

/** From this width on, editor and terminal sit side by side (56rem). */
const WIDE_LAYOUT_PX = 896;

export interface MountedWorkbench extends Disposable {
  /** The terminal's text (see TerminalView.transcript). */
  transcript(): string;
  /** The terminal's rows as shown (see TerminalView.rows). */
  terminalRows(): { text: string; wrapped: boolean }[];
  /** Moves the focus into the terminal (the page's skip link to it). */
  focusTerminal(): void;
}

export function mountWorkbench(mountPoint: HTMLElement, payloadData: unknown): MountedWorkbench {
  const { info, hintsHtml, clientHintsHtml } = parseWithFriendlyErrors(workbenchPayloadSchema, payloadData, 'Lab data in the page');
  const labId = info.id;
  let client: KafkaClient = savedClient(labId);
  const starterOf = (c: KafkaClient) => (c === 'kafkajs' ? info.starter : (info.clients[c]?.starter ?? info.starter));
  // A client without hints of its own for this lab shows the lab's (kafkajs) hints.
  const hintsOf = (c: KafkaClient) => (c === 'kafkajs' ? hintsHtml : (clientHintsHtml[c] ?? hintsHtml));
  const theme = currentTheme();

  // ---- layout ---------------------------------------------------------------------------------
  const badge = createConnectionBadge(() => connection.reconnect());
  const editorHost = h('div', { class: 'kiq-wb-editor' });
  const terminalHost = h('div', { class: 'kiq-wb-terminal' });
  const envPanel = createEnvPanel(info.env, injectedClientSettings(info.kafkajs));
  let hints = createHintsPanel(hintsOf(client), () => refreshToolbar());
  const progress = createProgressPanel();
  const report = createReportPanel();
  const history = createHistoryPanel({
    open: (attempt) => attempts.request(attempt, 'show'),
    load: (attempt) => attempts.request(attempt, 'load'),
    diff: (attempt) => attempts.request(attempt, 'diff'),
    revealSolution: () => attempts.revealSolution(),
  });
  // Verdicts are announced here, in a sentence, instead of reading out the whole report.
  const announcer = h('p', { class: 'kiq-sr-only kiq-wb-announcer', role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true' });
  const editorKeys = createEditorKeys();
  const toolbar = createToolbar({
    run: () => run(),
    grade: (quick) => grade(quick),
    stop: () => send({ type: 'stop' }),
    fault: (kind, instance) => fault(kind, instance),
    showHint: () => hints.showNext(),
    showAllHints: () => hints.showAll(),
    resetToStarter: () => {
      editor.resetToStarter();
      terminal.print([ansi.dim('Program reset to the starter (Ctrl+Z in the editor undoes it).')]);
    },
    toggleExpanded: () => toggleExpanded(),
    pickClient: (next) => pickClient(next),
  }, client);
  const root = h(
    'div',
    { class: 'kiq-wb' },
    h('header', { class: 'kiq-wb__head' }, h('span', { class: 'kiq-wb__kicker' }, 'Lab'), h('strong', { class: 'kiq-wb__title' }, info.title), badge.element),
    h('p', { class: 'kiq-wb__summary' }, info.summary),
    toolbar.element,
    // Grid areas (workbench.css): wide, the environment sits under the editor and the progress
    // under the terminal; stacked, the terminal follows the editor directly.
    editorKeys.element,
    h('div', { class: 'kiq-wb__main' }, editorHost, terminalHost, progress.element, envPanel.element),
    // The hints follow the report: a hint for a failed check is offered where its failure is read.
    report.element,
    history.element,
    hints.element,
    announcer,
  );
  mountPoint.replaceChildren(root);
  const layout = new ResizeObserver(() => {
    root.dataset.layout = root.clientWidth >= WIDE_LAYOUT_PX ? 'wide' : 'narrow';
  });
  layout.observe(root);

  // Expanded, the workbench moves into a modal <dialog>: the top layer sits above Starlight's
  // header and sidebars, keeps focus inside and closes on Escape.
  const dialog = h('dialog', { class: 'kiq-wb-dialog', 'aria-label': `Lab: ${info.title}` });
  dialog.addEventListener('close', () => {
    root.classList.remove('kiq-wb--expanded');
    mountPoint.append(root);
    dialog.remove();
    toolbar.setExpanded(false);
  });
  function toggleExpanded(): boolean {
    if (dialog.open) {
      dialog.close();
      return false;
    }
    document.body.append(dialog);
    root.classList.add('kiq-wb--expanded');
    dialog.append(root);
    dialog.showModal();
    return true;
  }

  const editor = createCodeEditor(editorHost, { labId, starter: starterOf(client), client, theme, label: `Program for the lab ${info.title} (TypeScript)` });
  const terminal = createTerminalView(terminalHost, { theme, label: 'Lab terminal: program output and commands', onCommand: (line) => runCommand(parseCommand(line)) });
  const tabMode = editor.onTabMovesFocus((moves) => editorKeys.setTabMovesFocus(moves));
  editor.addShortcut('run', () => run());
  editor.addShortcut('grade', () => grade(false));
  const themeWatch = watchTheme((next) => {
    editor.setTheme(next);
    terminal.setTheme(next);
  });

  function pickClient(next: KafkaClient) {
    if (next === client) return;
    client = next;
    saveClient(labId, client);
    editor.switchClient(client, starterOf(client));
    const fresh = createHintsPanel(hintsOf(client), () => refreshToolbar());
    hints.element.replaceWith(fresh.element);
    hints = fresh;
    terminal.print([ansi.dim(`Now writing the program with ${CLIENT_INFO[client].label}: its starter (or your saved program), hints and types.`)]);
    refreshToolbar();
  }

  // ---- state ----------------------------------------------------------------------------------
  let connected = false;
  let brokerFaults = false;
  let activity: ToolbarState['activity'] = 'idle';
  /** The lab the session is busy with (from `state`): messages about another lab are not ours. */
  let sessionLab: string | null = null;
  let instances: StateMessage['instances'] = [];
  /** Env name -> real topic of the latest run, kept after it ends for `consume`/`offsets`. */
  let topics: Record<string, string> = {};
  let lastPhase = '';
  const attempts = createAttemptHistory({ labId, terminal, editor, report, panel: history, announce, send, client: () => client });

  const ours = () => sessionLab === null || sessionLab === labId;
  const refreshToolbar = () =>
    toolbar.update({
      connected,
      brokerFaults,
      activity: ours() ? activity : 'idle',
      busyElsewhere: !ours() && activity !== 'idle',
      instances: ours() ? instances : [],
      hintsShown: hints.shown,
      hintsTotal: hints.count,
      hintFor: hints.nextFor,
    });

  // ---- connection -----------------------------------------------------------------------------
  const subscriber: ConnectionSubscriber = {
    state: (state) => onConnectionState(state),
    message: (message, mine) => onMessage(message, mine),
  };
  const { connection, release } = acquireConnection();
  const unsubscribe = connection.subscribe(subscriber);

  function onConnectionState(state: ConnectionState) {
    badge.update(state);
    const wasConnected = connected;
    connected = state.kind === 'open';
    if (state.kind === 'open') {
      brokerFaults = state.brokerFaults;
      if (!wasConnected) send({ type: 'history', lab: labId }, { quiet: true });
    } else if (wasConnected) {
      // The server stops a socket's runs when it closes, so whatever ran is over.
      activity = 'idle';
      sessionLab = null;
      instances = [];
      progress.hide();
      terminal.print([ansi.yellow(state.kind === 'taken-over' ? 'This lab session was opened in another tab; this one is now offline.' : 'Lost the connection to the lab server; reconnecting…')]);
    }
    refreshToolbar();
  }

  function onMessage(message: ServerMessage, mine: boolean) {
    switch (message.type) {
      case 'welcome':
        return;
      case 'state':
        activity = message.activity === 'idle' ? 'idle' : message.activity;
        sessionLab = message.activity === 'idle' ? null : message.lab;
        if (message.lab === labId || message.lab === null) {
          instances = message.instances;
          if (Object.keys(message.topics).length) {
            topics = message.topics;
            envPanel.showTopics(topics);
          }
          if (message.ids) envPanel.showValues(message.ids);
        }
        if (activity === 'idle') progress.hide();
        return refreshToolbar();
      case 'output':
        if (ours()) terminal.output(message.instance, message.stream, message.line);
        return;
      case 'diagnostics':
        if (ours()) terminal.print(formatDiagnostics(message.diagnostics));
        return;
      case 'progress':
        if (!ours()) return;
        progress.update(message);
        if (message.phase !== lastPhase) {
          lastPhase = message.phase;
          terminal.print([formatPhase(message)]);
        }
        return;
      case 'fault':
        if (ours()) terminal.print([formatFault(message.fault)]);
        return;
      case 'queue':
        // The server grades a few programs at a time; say where this one waits.
        terminal.print([
          message.position > 0
            ? ansi.yellow(`Waiting for a free grader: ${message.position === 1 ? 'next in line' : `position ${message.position} in the queue`} (Stop leaves the queue).`)
            : ansi.dim('A grader is free: grading starts.'),
        ]);
        return;
      case 'report':
        if (message.report.lab !== labId) return;
        activity = 'idle';
        lastPhase = '';
        progress.hide();
        terminal.printFitted((columns) => formatReport(message.report, columns));
        report.show(message.report);
        attempts.reportShown();
        announce(verdictSentence(message.report));
        hints.afterGrade(message.report.checks.filter((check) => !check.passed).map((check) => check.name));
        // A replay (a seed the learner chose) is never a pass: its outcome was known before it ran.
        if (message.report.verdict === 'pass' && !message.report.quick && !message.report.replay) recordPasses({ [labId]: new Date().toISOString() });
        send({ type: 'history', lab: labId }, { quiet: true });
        return refreshToolbar();
      case 'inspect-result':
        if (mine) terminal.print(formatInspectResult(message.result));
        return;
      case 'history':
      case 'attempt':
      case 'solution':
        return attempts.onMessage(message);
      case 'error':
        if (!mine) return;
        attempts.refused();
        if (activity === 'pending') activity = 'idle';
        // The server's message may quote the program (a compile error): sanitised before it is coloured.
        terminal.print([`${ansi.red('error')} ${showControlCharacters(message.message)}`]);
        return refreshToolbar();
    }
  }

  function announce(text: string) {
    // Emptied first, so the same verdict twice in a row is announced twice.
    announcer.textContent = '';
    requestAnimationFrame(() => {
      announcer.textContent = text;
    });
  }

  // ---- actions --------------------------------------------------------------------------------
  function send(message: OutgoingMessage, options: { quiet?: boolean } = {}): boolean {
    const sent = connection.send(subscriber, message);
    if (!sent && !options.quiet) terminal.print([ansi.yellow('Not connected to the lab server: the message was not sent. Is the lab server running?')]);
    return sent;
  }

  function programOrComplain(): string | null {
    const code = editor.getCode();
    if (new TextEncoder().encode(code).length > MAX_CODE_BYTES) {
      terminal.print([ansi.red(`Your program is larger than ${MAX_CODE_BYTES / 1024} KB; the lab server refuses it.`)]);
      return null;
    }
    return code;
  }

  function startActivity(message: OutgoingMessage) {
    if (activity !== 'idle' && ours()) {
      terminal.print([ansi.yellow('Already running: stop it first (Stop or `stop`).')]);
      return;
    }
    if (!send(message)) return;
    if (message.type === 'grade') {
      // The report on screen is the previous grade's (it stays in the history): the new one replaces it.
      report.element.hidden = true;
      attempts.gradeStarted();
    }
    activity = 'pending';
    sessionLab = labId;
    lastPhase = '';
    refreshToolbar();
  }

  function run() {
    const code = programOrComplain();
    if (code !== null) startActivity({ type: 'run', lab: labId, code });
  }

  function grade(quick: boolean, seed?: number) {
    const code = programOrComplain();
    if (code === null) return;
    startActivity(seed === undefined ? { type: 'grade', lab: labId, code, quick } : { type: 'grade', lab: labId, code, quick, seed });
  }

  function fault(kind: ManualFaultKind, instance?: string) {
    terminal.print([ansi.dim(`→ ${kind}${instance ? ` ${instance}` : ''}`)]);
    send(instance ? { type: 'fault', kind, instance } : { type: 'fault', kind });
  }

  function runCommand(command: Command) {
    switch (command.kind) {
      case 'empty':
        return;
      case 'help':
        return terminal.print(HELP_LINES.map((line) => ansi.dim(line)));
      case 'clear':
        return terminal.clear();
      case 'run':
        return run();
      case 'grade':
        return grade(command.quick, command.seed);
      case 'stop':
        send({ type: 'stop' });
        return;
      case 'invalid':
        return terminal.print([ansi.yellow(command.message)]);
      case 'history':
        return attempts.command(command.action, command.n);
      case 'inspect': {
        let inspect = command.command;
        if ((inspect.what === 'consume' || inspect.what === 'offsets') && command.topicArg) {
          const resolved = resolveTopic(command.topicArg, topics);
          if ('error' in resolved) return terminal.print([ansi.yellow(resolved.error)]);
          inspect = { ...inspect, topic: resolved.topic };
        }
        send({ type: 'inspect', command: inspect });
        return;
      }
    }
  }

  refreshToolbar();

  return {
    transcript: () => terminal.transcript(),
    terminalRows: () => terminal.rows(),
    focusTerminal: () => terminal.focus(),
    dispose() {
      try {
        unsubscribe();
        release();
        if (dialog.open) dialog.close();
        layout.disconnect();
        themeWatch.dispose();
        tabMode.dispose();
        terminal.dispose();
        editor.dispose();
      } catch (err) {
        console.warn(`[kafkaiq] workbench dispose: ${describeError(err)}`);
      }
    },
  };
}
