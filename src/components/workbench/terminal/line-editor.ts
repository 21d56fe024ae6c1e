/**
 * The command line at the bottom of the terminal: a prompt with line editing (left/right,
 * home/end, backspace/delete, Ctrl-C cancels, Ctrl-U clears) and history on the arrow keys.
 * It also lets output arrive while the learner types: the input line is wiped, the output
 * printed, and the line redrawn under it.
 *
 * It only needs a `write` sink, not xterm itself, so it can be tested without a browser.
 */

const PROMPT = '\x1b[1;36mkafkaiq\x1b[0m \x1b[2m›\x1b[0m ';
const PROMPT_WIDTH = 'kafkaiq › '.length;
const HISTORY_LIMIT = 200;

/** A submitted command as the terminal shows it: the prompt, then the line. */
export const promptLine = (line: string): string => `${PROMPT}${line}`;
/**
 * One key each: a whole escape sequence, a control character, or a run of printable text (a
 * paste). A sequence is taken whole, so the parts of one that is not a key never become typed
 * text: xterm's onData also carries its answers to queries (DA `ESC[?1;2c`, DSR/CPR `ESC[24;80R`,
 * OSC colour reports, DECRQSS `ESC P1$r…ESC\`, focus `ESC[I`), which the editor must ignore.
 * Forms: CSI (parameters, intermediates, final byte), OSC (to BEL or ST), DCS/SOS/PM/APC (to ST),
 * SS3, any other ESC pair (each also in its 8-bit C1 form); then single C0/C1 controls and DEL; then text.
 */
const TOKENS =
  // eslint-disable-next-line no-control-regex
  /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?|\x1bO[\x20-\x7e]?|\x1b[\x20-\x7e]?|[\x00-\x1f\x7f-\x9f]|[^\x00-\x1f\x7f-\x9f]+/g;

export class LineEditor {
  private buffer = '';
  private cursor = 0;
  private history: string[] = [];
  /** Position while browsing history; history.length = the line being typed. */
  private historyIndex = 0;
  private draft = '';

  constructor(
    private readonly write: (data: string) => void,
    private readonly onSubmit: (line: string) => void,
  ) {}

  /** Draws the prompt (call once the terminal is open). */
  start(): void {
    this.redraw();
  }

  /** Prints output above the input line, then puts the input line back. */
  printAbove(lines: readonly string[]): void {
    if (lines.length === 0) return;
    this.write('\r\x1b[2K' + lines.map((line) => line.replace(/\r?\n/g, '\r\n')).join('\r\n') + '\r\n');
    this.redraw();
  }

  /** After the screen was cleared. */
  reset(): void {
    this.redraw();
  }

  /** Feeds what xterm's onData delivered: typed keys, escape sequences or pasted text. */
  input(data: string): void {
    for (const token of data.replace(/\r\n|\n/g, '\r').match(TOKENS) ?? []) this.key(token);
  }

  private key(token: string): void {
    switch (token) {
      case '\r':
        return this.submit();
      case '\x7f':
      case '\b':
        return this.backspace();
      case '\x1b[3~':
        return this.edit(this.buffer.slice(0, this.cursor) + this.buffer.slice(this.cursor + 1), this.cursor);
      case '\x1b[D':
        return this.moveTo(this.cursor - 1);
      case '\x1b[C':
        return this.moveTo(this.cursor + 1);
      case '\x1b[H':
      case '\x1bOH':
      case '\x01':
        return this.moveTo(0);
      case '\x1b[F':
      case '\x1bOF':
      case '\x05':
        return this.moveTo(this.buffer.length);
      case '\x1b[A':
        return this.browseHistory(-1);
      case '\x1b[B':
        return this.browseHistory(1);
      case '\x03':
        return this.cancel();
      case '\x15':
        return this.edit('', 0);
    }
    // Other keys (F-keys, alt-combos, control characters) and terminal replies do nothing; text is inserted.
    // eslint-disable-next-line no-control-regex
    if (token.startsWith('\x1b') || /^[\x00-\x1f\x7f-\x9f]/.test(token)) return;
    this.edit(this.buffer.slice(0, this.cursor) + token + this.buffer.slice(this.cursor), this.cursor + token.length);
  }

  private submit() {
    const line = this.buffer;
    this.write('\r\n');
    if (line.trim() && this.history[this.history.length - 1] !== line) {
      this.history.push(line);
      if (this.history.length > HISTORY_LIMIT) this.history.shift();
    }
    this.historyIndex = this.history.length;
    this.draft = '';
    this.buffer = '';
    this.cursor = 0;
    this.onSubmit(line);
    this.redraw();
  }

  private cancel() {
    this.write(`\r\x1b[2K${PROMPT}${this.buffer}\x1b[2m^C\x1b[0m\r\n`);
    this.buffer = '';
    this.cursor = 0;
    this.historyIndex = this.history.length;
    this.redraw();
  }

  private backspace() {
    if (this.cursor === 0) return;
    this.edit(this.buffer.slice(0, this.cursor - 1) + this.buffer.slice(this.cursor), this.cursor - 1);
  }

  private browseHistory(step: -1 | 1) {
    const next = this.historyIndex + step;
    if (next < 0 || next > this.history.length) return;
    if (this.historyIndex === this.history.length) this.draft = this.buffer;
    this.historyIndex = next;
    const line = next === this.history.length ? this.draft : (this.history[next] ?? '');
    this.edit(line, line.length);
  }

  private moveTo(position: number) {
    const clamped = Math.max(0, Math.min(this.buffer.length, position));
    if (clamped === this.cursor) return;
    this.cursor = clamped;
    this.redraw();
  }

  private edit(buffer: string, cursor: number) {
    this.buffer = buffer;
    this.cursor = Math.max(0, Math.min(buffer.length, cursor));
    this.redraw();
  }

  /** Rewrites the whole input line and puts the cursor where it belongs. */
  private redraw() {
    const back = this.buffer.length - this.cursor;
    this.write(`\r\x1b[2K${PROMPT}${this.buffer}${back > 0 ? `\x1b[${back}D` : ''}`);
  }

  /** For tests: what is typed and where the cursor is. */
  get state(): { buffer: string; cursor: number; promptWidth: number } {
    return { buffer: this.buffer, cursor: this.cursor, promptWidth: PROMPT_WIDTH };
  }
}
