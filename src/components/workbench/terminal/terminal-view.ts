/**
 * The xterm terminal: program output from every instance (tagged and coloured per instance),
 * grader notes, and the learner's command line. Fits its container and follows the site theme.
 */
import { Terminal, type ITheme } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import type { ThemeName } from '../theme.ts';
import { ansi } from './ansi.ts';
import { LineEditor } from './line-editor.ts';
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

export interface TerminalView {
  /** A line of program output. */
  output(instance: string, stream: 'stdout' | 'stderr' | 'system', line: string): void;
  /**
   * Lines the workbench itself prints (tables, notes); they may carry its own ANSI colours, and
   * nothing else: any other control character is shown escaped (keepOnlyColours).
   */
  print(lines: readonly string[]): void;
  clear(): void;
  /** Its width in character columns, for text that wraps itself (the report). */
  columns(): number;
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
    scrollback: 5_000,
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

  const editor = new LineEditor((data) => terminal.write(data), options.onCommand);
  const input = terminal.onData((data) => editor.input(data));
  terminal.attachCustomKeyEventHandler((event) => {
    // Tab leaves the terminal (keyboard users must not be trapped; there is no completion).
    if (event.key === 'Tab') return false;
    // Ctrl-L clears, as in a shell; everything else goes to xterm.
    if (event.type === 'keydown' && event.ctrlKey && event.key === 'l') {
      terminal.clear();
      editor.reset();
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
  const queue = (lines: readonly string[]) => {
    pending.push(...lines.map(screenText));
    if (pending.length > PENDING_LIMIT) {
      skipped += pending.length - PENDING_LIMIT;
      pending = pending.slice(-PENDING_LIMIT);
    }
    frame ||= requestAnimationFrame(flush);
  };

  return {
    output(instance, stream, line) {
      queue([outputLine(instance, stream, line)]);
    },
    print: queue,
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
    clear() {
      pending = [];
      skipped = 0;
      terminal.clear();
      editor.reset();
    },
    columns: () => terminal.cols,
    setTheme(theme) {
      terminal.options.theme = THEMES[theme];
    },
    focus: () => terminal.focus(),
    dispose() {
      cancelAnimationFrame(frame);
      resize.disconnect();
      input.dispose();
      terminal.dispose();
    },
  };
}
