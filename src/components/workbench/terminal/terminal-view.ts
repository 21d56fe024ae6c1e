/**
 * The xterm terminal: program output from every instance (tagged and coloured per instance),
 * grader notes, and the learner's command line. Fits its container and follows the site theme.
 */
import { Terminal, type ITheme } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import type { ThemeName } from '../theme.ts';
import { ansi } from './ansi.ts';
import { LineEditor, promptLine } from './line-editor.ts';
import { outputLine, screenText } from './screen-text.ts';

const THEMES: Record<ThemeName, ITheme> = {
  // brightBlack is the workbench's "dim" (ansi.ts): a grey of at least 4.5:1 on the background.
  dark: { background: '#17181c', foreground: '#d9dce3', cursor: '#a6e4f0', selectionBackground: '#0e7c9366', brightBlack: '#9a9ea8' },
  light: {
    background: '#fbfbfc',
    foreground: '#23262d',
    cursor: '#0b6a7e',
    selectionBackground: '#0b6a7e33',
    // The default ANSI yellow/cyan are unreadable on white.
    yellow: '#8a6100',
    brightYellow: '#7a5200',
    cyan: '#0b6a7e',
    brightCyan: '#075566',
    green: '#1c7a35',
    white: '#4b5060',
    brightWhite: '#23262d',
    brightBlack: '#5f6370',
  },
};

const PENDING_LIMIT = 5_000;
const SCROLLBACK = 5_000;
/** Resizes come in bursts (the Expand dialog opening, a window dragged): lay out once they settle. */
const RELAYOUT_DELAY_MS = 150;

/** What the terminal has shown, kept to lay it out again at a new width: lines as printed, or a fitted text and its layout. */
interface Shown {
  lines: string[];
  render?: (columns: number) => string[];
}

export interface TerminalView {
  /** A line of program output. */
  output(instance: string, stream: 'stdout' | 'stderr' | 'system', line: string): void;
  /**
   * Lines the workbench itself prints (tables, notes); they may carry its own ANSI colours, and
   * nothing else: any other control character is shown escaped (keepOnlyColours).
   */
  print(lines: readonly string[]): void;
  /**
   * Text laid out for a width (the report, wrapped between words): laid out again whenever the
   * terminal's width changes, so no word is ever split across rows by xterm's own re-wrapping.
   */
  printFitted(render: (columns: number) => string[]): void;
  clear(): void;
  setTheme(theme: ThemeName): void;
  focus(): void;
  /** Everything in the scrollback as plain text (colours dropped): for copying and for tests. */
  transcript(): string;
  /**
   * The scrollback's rows as shown (colours dropped); `wrapped` marks a row xterm continued from
   * the row above because the line was wider than the terminal. For tests of the layout.
   */
  rows(): { text: string; wrapped: boolean }[];
  dispose(): void;
}

export function createTerminalView(container: HTMLElement, options: { theme: ThemeName; label: string; onCommand: (line: string) => void }): TerminalView {
  const terminal = new Terminal({
    theme: THEMES[options.theme],
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
    fontSize: 13,
    scrollback: SCROLLBACK,
    convertEol: false,
    cursorBlink: true,
    // xterm's default ANSI colours (red, blue, magenta on the dark background) fall below 4.5:1:
    // it lightens or darkens any foreground that would.
    minimumContrastRatio: 4.5,
    // Screen readers get the output through xterm's accessibility tree.
    screenReaderMode: false,
  });
  const fit = new FitAddon();
  terminal.loadAddon(fit);
  terminal.open(container);
  terminal.textarea?.setAttribute('aria-label', options.label);

  // Everything shown since the last clear, newest last, bounded like the scrollback.
  let shown: Shown[] = [];
  let shownLines = 0;
  const remember = (entry: Shown) => {
    shown.push(entry);
    shownLines += entry.lines.length;
    while (shownLines > SCROLLBACK && shown.length > 1) shownLines -= shown.shift()!.lines.length;
  };
  const editor = new LineEditor(
    (data) => terminal.write(data),
    (line) => {
      remember({ lines: [screenText(promptLine(line))] });
      options.onCommand(line);
    },
  );
  const input = terminal.onData((data) => editor.input(data));
  terminal.attachCustomKeyEventHandler((event) => {
    // Tab leaves the terminal (keyboard users must not be trapped; there is no completion).
    if (event.key === 'Tab') return false;
    // Ctrl-L clears, as in a shell; everything else goes to xterm.
    if (event.type === 'keydown' && event.ctrlKey && event.key === 'l') {
      clearAll();
      return false;
    }
    return true;
  });

  const refit = () => {
    // fit() throws while the container is hidden (zero size); the next resize fixes it.
    if (container.clientWidth > 0 && container.clientHeight > 0) fit.fit();
  };
  const resize = new ResizeObserver(() => refit());
  resize.observe(container);
  refit();

  // xterm re-wraps at any character when the width shrinks: text laid out for the old width would
  // split words. Once the width settles, everything shown is written again, each fitted text laid
  // out for the new width (program output is written unchanged: xterm wraps it itself).
  let relayoutTimer: ReturnType<typeof setTimeout> | undefined;
  let laidOutFor = terminal.cols;
  const relayout = () => {
    relayoutTimer = undefined;
    if (terminal.cols === laidOutFor) return;
    laidOutFor = terminal.cols;
    if (!shown.some((entry) => entry.render)) return;
    // Lines still waiting for the next frame are in `shown` too: they are written with the rest.
    cancelAnimationFrame(frame);
    frame = 0;
    pending = [];
    skipped = 0;
    for (const entry of shown) if (entry.render) entry.lines = entry.render(terminal.cols).map(screenText);
    shownLines = shown.reduce((n, entry) => n + entry.lines.length, 0);
    terminal.clear();
    editor.printAbove(shown.flatMap((entry) => entry.lines));
  };
  const resized = terminal.onResize(() => {
    clearTimeout(relayoutTimer);
    relayoutTimer = setTimeout(relayout, RELAYOUT_DELAY_MS);
  });

  terminal.writeln(ansi.dim('Program output appears here. Type help for commands.'));
  editor.start();

  // A busy program prints thousands of lines a second: they are written once per frame, not one
  // by one, and a tab in the background keeps only the newest ones.
  let pending: string[] = [];
  let skipped = 0;
  let frame = 0;
  const flush = () => {
    frame = 0;
    const lines = skipped ? [ansi.dim(`… ${skipped} earlier lines skipped while the tab was in the background`), ...pending] : pending;
    pending = [];
    skipped = 0;
    editor.printAbove(lines);
  };
  // The one way text reaches xterm besides the command line's echo: only the workbench's colours
  // pass, so no escape sequence can move the cursor, retitle, set the clipboard or make xterm reply.
  const queue = (lines: readonly string[], render?: Shown['render']) => {
    const safe = lines.map(screenText);
    remember({ lines: safe, render });
    pending.push(...safe);
    if (pending.length > PENDING_LIMIT) {
      skipped += pending.length - PENDING_LIMIT;
      pending = pending.slice(-PENDING_LIMIT);
    }
    frame ||= requestAnimationFrame(flush);
  };

  function clearAll() {
    pending = [];
    skipped = 0;
    shown = [];
    shownLines = 0;
    terminal.clear();
    editor.reset();
  }

  return {
    output(instance, stream, line) {
      queue([outputLine(instance, stream, line)]);
    },
    print: (lines) => queue(lines),
    printFitted(render) {
      queue(render(terminal.cols), render);
    },
    transcript() {
      const buffer = terminal.buffer.active;
      const lines: string[] = [];
      for (let y = 0; y < buffer.length; y++) {
        const line = buffer.getLine(y);
        if (!line) continue;
        // A wrapped row continues the previous line.
        if (line.isWrapped && lines.length) lines[lines.length - 1] += line.translateToString(true);
        else lines.push(line.translateToString(true));
      }
      return lines.join('\n');
    },
    rows() {
      const buffer = terminal.buffer.active;
      const rows: { text: string; wrapped: boolean }[] = [];
      for (let y = 0; y < buffer.length; y++) {
        const line = buffer.getLine(y);
        if (line) rows.push({ text: line.translateToString(true), wrapped: line.isWrapped });
      }
      return rows;
    },
    clear: () => clearAll(),
    setTheme(theme) {
      terminal.options.theme = THEMES[theme];
    },
    focus: () => terminal.focus(),
    dispose() {
      cancelAnimationFrame(frame);
      clearTimeout(relayoutTimer);
      resized.dispose();
      resize.disconnect();
      input.dispose();
      terminal.dispose();
    },
  };
}
