/**
 * The learner's graded attempts of one lab in the workbench: the list the server keeps, an attempt
 * reopened (its report), loaded (its program into the editor) or diffed against the editor, the
 * last report restored after a reload, and the reference solution once offered. Owns that state;
 * the workbench hands it the server's `history`, `attempt` and `solution` messages.
 */
import type { AttemptSummary, ServerMessage, SolutionReveal } from '../../shared/messages.ts';
import { diffLines, unifiedDiff } from '../../shared/line-diff.ts';
import type { KafkaClient } from '../../shared/clients.ts';
import type { OutgoingMessage } from './connection.ts';
import type { CodeEditor } from './editor/code-editor.ts';
import type { HistoryPanel } from './panels/history-panel.ts';
import { verdictSentence, type ReportPanel } from './panels/report-panel.ts';
import { recordPasses } from './storage.ts';
import { ansi } from './terminal/ansi.ts';
import { formatReport } from './terminal/format-report.ts';
import type { TerminalView } from './terminal/terminal-view.ts';

type AttemptAction = 'show' | 'load' | 'diff' | 'restore';

export interface AttemptHistoryDeps {
  labId: string;
  terminal: TerminalView;
  editor: CodeEditor;
  report: ReportPanel;
  panel: HistoryPanel;
  announce: (text: string) => void;
  send: (message: OutgoingMessage, options?: { quiet?: boolean }) => boolean;
  client: () => KafkaClient;
}

export interface AttemptHistory {
  /** The `history` terminal command. */
  command(action: 'list' | 'show' | 'load' | 'diff', n?: number): void;
  /** A panel button: reopen, load or diff one attempt. */
  request(attempt: AttemptSummary, action: 'show' | 'load' | 'diff'): void;
  revealSolution(): void;
  /** A new grade starts: its report replaces the one on screen, and a late restore must not land. */
  gradeStarted(): void;
  /** A grade's report is on screen. */
  reportShown(): void;
  /** The server refused something this workbench asked: no solution is on its way. */
  refused(): void;
  onMessage(message: Extract<ServerMessage, { type: 'history' | 'attempt' | 'solution' }>): void;
}

export function createAttemptHistory(deps: AttemptHistoryDeps): AttemptHistory {
  const { labId, terminal, editor, report, panel, announce, send } = deps;
  /** This lab's graded attempts (newest first) and reference-solution reveals, as the server last listed them. */
  let attempts: AttemptSummary[] = [];
  let reveals: SolutionReveal[] = [];
  /** Whether a report is on screen already (a grade, or the last one reopened after a reload). */
  let reportOnScreen = false;
  /** Attempts asked for, by id, and what to do with each when it arrives. */
  const pending = new Map<number, AttemptAction>();
  /** The `history` command waits for the list it asked for. */
  let printListNext = false;
  /**
   * Set while this workbench waits for the reference solution. Not the connection's `mine`: another
   * workbench of the page may send a request in between (its history on mounting), and the answer
   * is still ours.
   */
  let solutionRequested = false;

  function request(attempt: AttemptSummary, action: 'show' | 'load' | 'diff') {
    if (action !== 'show' && !attempt.hasCode) {
      terminal.print([ansi.yellow(`Attempt #${attempt.n} no longer keeps its program (only the newest attempts of a lab do); its report is kept: history show ${attempt.n}.`)]);
      return;
    }
    pending.set(attempt.id, action);
    if (!send({ type: 'attempt', id: attempt.id })) pending.delete(attempt.id);
  }

  function show(found: Extract<ServerMessage, { type: 'attempt' }>, action: AttemptAction) {
    const { summary, code } = found;
    const when = new Date(summary.at).toLocaleString();
    switch (action) {
      case 'restore':
      case 'show':
        terminal.print([ansi.dim(action === 'restore' ? `Your last grade of this lab (attempt #${summary.n}, ${when}), from your history:` : `Attempt #${summary.n} (${when}), from your history:`)]);
        terminal.printFitted((columns) => formatReport(found.report, columns));
        report.show(found.report);
        if (action === 'show') announce(`Attempt ${summary.n} reopened. ${verdictSentence(found.report)}`);
        return;
      case 'load':
        if (code === null) return terminal.print([ansi.yellow(`Attempt #${summary.n} no longer keeps its program.`)]);
        editor.replaceCode(code);
        terminal.print([ansi.dim(`The program of attempt #${summary.n} (${when}) is in the editor (Ctrl+Z in the editor undoes it).`)]);
        announce(`Program of attempt ${summary.n} loaded into the editor.`);
        return;
      case 'diff': {
        if (code === null) return terminal.print([ansi.yellow(`Attempt #${summary.n} no longer keeps its program.`)]);
        const current = editor.getCode();
        const title = `Attempt #${summary.n} (−) against your current code (+)`;
        const lines = unifiedDiff(code, current, { old: `attempt #${summary.n}`, new: 'your code' });
        if (lines.length === 0) {
          terminal.print([ansi.dim(`Attempt #${summary.n} graded exactly the code in the editor now.`)]);
          panel.showDiff(title, null, []);
        } else {
          terminal.print(lines.map((l) => (l.startsWith('@@') ? ansi.dim(l) : l.startsWith('+') ? ansi.green(l) : l.startsWith('-') ? ansi.red(l) : l)));
          panel.showDiff(title, diffLines(code, current), lines);
        }
        const changed = lines.filter((l) => /^[+-](?![+-]{2} )/.test(l)).length;
        announce(lines.length === 0 ? `No difference from attempt ${summary.n}.` : `Diff with attempt ${summary.n}: ${changed} changed lines, shown under the history.`);
        return;
      }
    }
  }

  function printList() {
    if (attempts.length === 0) return terminal.print([ansi.dim('No graded attempt of this lab yet: grade your program (Grade or `grade`).')]);
    terminal.print([ansi.bold(`Your graded attempts of this lab, newest first (${attempts.length}):`)]);
    terminal.print(
      attempts.map((a) => {
        const verdict = a.verdict === 'pass' ? ansi.green('PASS') : a.verdict === 'fail' || a.verdict === 'error' ? ansi.red(a.verdict.toUpperCase()) : ansi.yellow(a.verdict.toUpperCase());
        return `  #${String(a.n).padEnd(4)} ${verdict.padEnd(4)}  ${a.quick ? 'quick' : 'full '}  seed ${String(a.seed).padEnd(10)}  ${new Date(a.at).toLocaleString()}${a.hasCode ? '' : ansi.dim('  (report only)')}`;
      }),
    );
    for (const r of reveals) terminal.print([ansi.dim(`  reference solution shown ${new Date(r.at).toLocaleString()}${r.beforePass ? ' (before your first pass)' : ''}`)]);
    terminal.print([ansi.dim('history show N: its report · history load N: its program into the editor · history diff N: a diff with your code')]);
  }

  return {
    request,
    command(action, n) {
      if (action === 'list') {
        printListNext = true;
        if (!send({ type: 'history', lab: labId })) printListNext = false;
        return;
      }
      const attempt = attempts.find((a) => a.n === n);
      if (!attempt) {
        return terminal.print([ansi.yellow(attempts.length ? `No attempt #${n}: this lab's attempts are numbered ${attempts.at(-1)!.n} to ${attempts[0]!.n} (type history).` : 'No graded attempt of this lab yet.')]);
      }
      request(attempt, action);
    },
    revealSolution() {
      if (attempts.length === 0) return terminal.print([ansi.yellow('The reference solution is offered after your first graded attempt: press Grade first.')]);
      solutionRequested = send({ type: 'solution', lab: labId, client: deps.client() });
    },
    gradeStarted() {
      // A last report still on its way back after a reload is older than this grade: showing it
      // when it lands would pass it off as this grade's verdict.
      reportOnScreen = true;
      for (const [id, action] of pending) if (action === 'restore') pending.delete(id);
    },
    reportShown() {
      reportOnScreen = true;
    },
    refused() {
      solutionRequested = false;
    },
    onMessage(message) {
      switch (message.type) {
        case 'history': {
          // The server remembers passes by session id: they come back even after storage was cleared.
          const passedAt = new Map(message.attempts.filter((a) => a.verdict === 'pass' && !a.quick).map((a) => [a.lab, a.at]));
          recordPasses(Object.fromEntries(message.passedLabs.map((lab) => [lab, passedAt.get(lab) ?? new Date().toISOString()])));
          // Only a list of this lab (or of every lab) is this panel's.
          if (message.lab !== undefined && message.lab !== labId) return;
          attempts = message.attempts.filter((a) => a.lab === labId);
          reveals = message.reveals.filter((r) => r.lab === labId);
          panel.update(attempts, reveals);
          if (printListNext && message.lab === labId) {
            printListNext = false;
            printList();
          }
          // After a reload the last report comes back: the newest attempt, reopened once.
          const newest = attempts[0];
          if (!reportOnScreen && newest && !pending.has(newest.id)) {
            reportOnScreen = true;
            pending.set(newest.id, 'restore');
            send({ type: 'attempt', id: newest.id }, { quiet: true });
          }
          return;
        }
        case 'attempt': {
          const action = pending.get(message.summary.id);
          if (action === undefined || message.summary.lab !== labId) return;
          pending.delete(message.summary.id);
          return show(message, action);
        }
        case 'solution':
          if (!solutionRequested || message.lab !== labId) return;
          solutionRequested = false;
          terminal.print([ansi.dim(`Reference solution shown below the report${message.reveal.beforePass ? ' (before your first pass; your history and your instructor see that)' : ''}.`)]);
          panel.showSolution(message.code, message.reveal, () => {
            editor.replaceCode(message.code);
            terminal.print([ansi.dim('Reference solution loaded into the editor (Ctrl+Z in the editor undoes it).')]);
          });
          send({ type: 'history', lab: labId }, { quiet: true });
          return;
      }
    },
  };
}
