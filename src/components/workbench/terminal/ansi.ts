/** ANSI styling and plain-text tables for the xterm terminal. */

const ESC = '\x1b[';
const style = (code: string) => (text: string) => `${ESC}${code}m${text}${ESC}0m`;

export const ansi = {
  bold: style('1'),
  // Not SGR 2 (faint): xterm paints it at half opacity, below a readable contrast. Bright black
  // is a grey each terminal theme sets to at least 4.5:1 against its background (terminal-view.ts).
  dim: style('90'),
  red: style('31'),
  green: style('32'),
  yellow: style('33'),
  blue: style('34'),
  magenta: style('35'),
  cyan: style('36'),
  boldRed: style('1;31'),
  boldGreen: style('1;32'),
};

/** One colour per instance, in order of appearance; the grader and system lines stay neutral. */
const INSTANCE_COLOURS = ['36', '35', '33', '32', '34', '96', '95', '93'];

export function instanceTag(instance: string): string {
  if (instance === 'grader') return style('1;37')('[grader]');
  const index = /^i(\d+)$/.exec(instance)?.[1];
  const colour = index ? INSTANCE_COLOURS[(Number(index) - 1) % INSTANCE_COLOURS.length] : '37';
  return style(`1;${colour}`)(`[${instance}]`);
}

/** Visible width: escape sequences take no columns. */
export function visibleLength(text: string): number {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, '').length;
}

function pad(text: string, width: number, align: 'left' | 'right'): string {
  const gap = ' '.repeat(Math.max(0, width - visibleLength(text)));
  return align === 'right' ? gap + text : text + gap;
}

export interface Column<Row> {
  header: string;
  cell: (row: Row) => string;
  align?: 'left' | 'right';
}

/** A table as terminal lines: header, rule, rows. Cells may carry ANSI colour. */
export function table<Row>(rows: readonly Row[], columns: readonly Column<Row>[]): string[] {
  const cells = rows.map((row) => columns.map((column) => column.cell(row)));
  const widths = columns.map((column, i) => Math.max(column.header.length, ...cells.map((r) => visibleLength(r[i] ?? ''))));
  const line = (values: string[]) => values.map((value, i) => pad(value, widths[i] ?? 0, columns[i]?.align ?? 'left')).join('  ').trimEnd();
  return [ansi.bold(line(columns.map((c) => c.header))), ansi.dim(widths.map((w) => '─'.repeat(w)).join('  ')), ...cells.map(line)];
}
