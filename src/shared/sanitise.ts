/**
 * The one sanitiser for text a learner's program controls (its output lines, record keys and
 * values, transactional ids, fault notes that quote them, compiler messages that quote its code)
 * on its way to a terminal (the CLI, the workbench's xterm) or a page. Every control character is
 * shown as a visible escape, so nothing a program prints can restyle, move the cursor, retitle the
 * window, plant a link, write the clipboard (OSC 52) or make xterm answer a query by typing.
 *
 * Where the text is the workbench's own (a report, a table), its colours are added AFTER
 * sanitising, and keepOnlyColours is the last step before the terminal: it lets through exactly
 * the SGR colours the workbench uses and escapes everything else, so a path that forgot to sanitise
 * can at worst colour, never command, the terminal.
 *
 * Pure (no I/O, no Node APIs): the browser's islands import it too.
 */

/**
 * C0 and C1 controls, DEL, and the invisible Unicode marks that reorder or hide text (bidi
 * overrides and isolates, zero-width characters, line/paragraph separators, the BOM).
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/**
 * Control characters as visible escapes: ESC becomes the four characters `\x1b`, a newline `\n`.
 * The result contains no control character, so sanitising twice changes nothing.
 */
export function showControlCharacters(text: string): string {
  return text.replace(CONTROL, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * Every string inside a value (an object from the wire: an inspect result, a fault record)
 * sanitised, whatever its fields: a field added later is covered without anyone remembering to.
 */
export function showControlCharactersDeep<T>(value: T): T {
  if (typeof value === 'string') return showControlCharacters(value) as T;
  if (Array.isArray(value)) return value.map((v) => showControlCharactersDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [showControlCharacters(k), showControlCharactersDeep(v)])) as T;
  }
  return value;
}

/**
 * The SGR parameters the workbench and the CLI colour with (src/shared/format-report.ts ansiPaint,
 * src/components/workbench/terminal/ansi.ts): reset, bold, dim and the 8 + 8 foreground colours.
 * Nothing that hides text (8), blinks, or sets a background.
 */
const OWN_SGR_PARAMS = new Set(['0', '1', '2', '22', '39', ...[30, 31, 32, 33, 34, 35, 36, 37, 90, 91, 92, 93, 94, 95, 96, 97].map(String)]);

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[([0-9;]*)m/g;

/**
 * The last step before a terminal for text the workbench composed: its own colours (SGR with the
 * parameters above) pass; every other control character, including any other escape sequence, is
 * shown escaped. `\n` is kept when `keepNewlines` (a multi-line block the caller splits itself).
 */
export function keepOnlyColours(text: string, options: { keepNewlines?: boolean } = {}): string {
  let out = '';
  let last = 0;
  const rest = (part: string) =>
    options.keepNewlines
      ? part
          .split('\n')
          .map((line) => showControlCharacters(line))
          .join('\n')
      : showControlCharacters(part);
  for (const match of text.matchAll(SGR)) {
    const params = match[1] ?? '';
    if (!(params === '' || params.split(';').every((p) => OWN_SGR_PARAMS.has(p)))) continue;
    out += rest(text.slice(last, match.index)) + match[0];
    last = match.index! + match[0].length;
  }
  return out + rest(text.slice(last));
}

/** Whether text would reach a terminal unchanged by keepOnlyColours (tests, assertions). */
export function hasOnlyOwnColours(text: string): boolean {
  return keepOnlyColours(text, { keepNewlines: true }) === text;
}

/**
 * JSON for a terminal: JSON.stringify escapes C0 controls but leaves DEL, C1 (0x9b is a CSI on
 * its own) and the invisible marks raw; those become \u escapes, so the text is still the same JSON.
 */
export function jsonForTerminal(value: unknown, indent = 2): string {
  // eslint-disable-next-line no-control-regex
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
