/**
 * Which kind of statement a piece of SQL is, for the relay's PostgreSQL points: BEGIN, a write
 * (INSERT, UPDATE, DELETE, MERGE, COPY ... FROM, a WITH ending in one), COMMIT, ROLLBACK, or other.
 * Reads the bytes as PostgreSQL's lexer would as far as statements go: strings, quoted names,
 * dollar-quoted bodies and nested comments hide their semicolons and keywords, and a routine's
 * BEGIN ATOMIC ... END body is one statement.
 */

export type SqlStatementKind = 'begin' | 'commit' | 'rollback' | 'write' | 'other';

const byte = (char: string) => char.charCodeAt(0);

/** The kinds of the statements in `sql`, in order, empty statements left out. */
export function classifySql(sql: string): SqlStatementKind[] {
  return classifyBytes(Buffer.from(sql, 'utf8'));
}

const WRITES = new Set(['insert', 'update', 'delete', 'merge']);
const ROUTINES = new Set(['function', 'procedure']);

/** What one statement's tokens have shown so far. */
class StatementScan {
  tokens = 0;
  /** The first four words, lower case ('' for one that cannot be a keyword). */
  readonly words: string[] = [];
  depth = 0;
  /** Inside BEGIN ATOMIC ... END of a CREATE FUNCTION or PROCEDURE, where ';' does not end the statement. */
  blockDepth = 0;
  private afterParenthesis = false;
  private writesInWith = false;
  private copyFrom: boolean | null = null;
  /** CREATE [OR REPLACE] FUNCTION or PROCEDURE. */
  private routine = false;

  word(sql: Buffer, start: number, end: number): void {
    this.tokens++;
    const { words, afterParenthesis } = this;
    this.afterParenthesis = false;
    const first = words[0];
    // A word is decoded only where it can matter: the leading words, or one a WITH, COPY or CREATE FUNCTION depends on.
    const wanted = (first === 'with' && afterParenthesis) || (first === 'copy' && this.depth === 0 && this.copyFrom === null) || (this.routine && this.depth === 0);
    if (words.length >= 4 && !wanted) return;
    const word = end - start <= 12 ? sql.toString('latin1', start, end).toLowerCase() : '';
    if (words.length < 4) {
      words.push(word);
      this.routine = words[0] === 'create' && (ROUTINES.has(words[1]!) || (words[1] === 'or' && words[2] === 'replace' && ROUTINES.has(words[3]!)));
    }
    // In a WITH, a data-modifying statement follows a parenthesis: a CTE's body, or the main statement.
    if (first === 'with' && afterParenthesis && WRITES.has(word)) this.writesInWith = true;
    if (first === 'copy' && this.depth === 0 && this.copyFrom === null && (word === 'from' || word === 'to')) this.copyFrom = word === 'from';
    if (this.routine && this.depth === 0) {
      // psql's rule: ';' ends no statement inside BEGIN [ATOMIC] ... END, where CASE ... END nests too.
      if (word === 'begin' || (word === 'case' && this.blockDepth > 0)) this.blockDepth++;
      else if (word === 'end' && this.blockDepth > 0) this.blockDepth--;
    }
  }

  other(punctuation?: number): void {
    this.tokens++;
    if (punctuation === byte('(')) this.depth++;
    else if (punctuation === byte(')')) this.depth = Math.max(0, this.depth - 1);
    this.afterParenthesis = punctuation === byte('(') || punctuation === byte(')');
  }

  kind(): SqlStatementKind {
    const [first, second, third] = this.words;
    const afterWork = second === 'work' || second === 'transaction' ? third : second;
    if (first === 'begin' || (first === 'start' && second === 'transaction')) return 'begin';
    if ((first === 'commit' && second !== 'prepared') || first === 'end') return 'commit';
    // ROLLBACK [WORK] TO [SAVEPOINT] and ROLLBACK PREPARED leave the transaction open or are another one's.
    if ((first === 'rollback' && afterWork !== 'to' && afterWork !== 'prepared') || first === 'abort') return 'rollback';
    const writes = first === 'copy' ? this.copyFrom : first === 'with' ? this.writesInWith : WRITES.has(first!);
    return writes ? 'write' : 'other';
  }
}

/**
 * Reads SQL as bytes: every character that matters (keywords, quotes, ';') is ASCII, and a UTF-8
 * byte of another character never equals one. Literals, quoted identifiers and comments are
 * skipped whole, so a ';' or a keyword inside them counts for nothing. Stops after `max` kinds.
 */
export function classifyBytes(sql: Buffer, max = Infinity): SqlStatementKind[] {
  const kinds: SqlStatementKind[] = [];
  let statement = new StatementScan();
  let at = 0;
  while (at < sql.length && kinds.length < max) {
    const char = sql[at]!;
    const next = sql[at + 1];
    if (char === byte(';') && statement.blockDepth === 0) {
      if (statement.tokens > 0) kinds.push(statement.kind());
      statement = new StatementScan();
      at++;
    } else if (char === 0x20 || (char >= 0x09 && char <= 0x0d)) {
      at++;
    } else if (char === byte('-') && next === byte('-')) {
      while (at < sql.length && sql[at] !== 0x0a && sql[at] !== 0x0d) at++;
    } else if (char === byte('/') && next === byte('*')) {
      at = blockCommentEnd(sql, at);
    } else if (isIdentifierStart(char) || isDigit(char)) {
      let end = at + 1;
      while (end < sql.length && (isIdentifierStart(sql[end]!) || isDigit(sql[end]!) || sql[end] === byte('$'))) end++;
      if (end === at + 1 && (char | 0x20) === byte('e') && sql[end] === byte("'")) {
        at = quotedEnd(sql, end, true); // E'...': backslash escapes
        statement.other();
      } else {
        if (isDigit(char)) statement.other();
        else statement.word(sql, at, end);
        at = end;
      }
    } else if (char === byte("'") || char === byte('"')) {
      at = quotedEnd(sql, at, false);
      statement.other();
    } else if (char === byte('$')) {
      at = dollarEnd(sql, at);
      statement.other();
    } else {
      statement.other(char);
      at++;
    }
  }
  if (statement.tokens > 0 && kinds.length < max) kinds.push(statement.kind());
  return kinds;
}

const isIdentifierStart = (char: number) => ((char | 0x20) >= 0x61 && (char | 0x20) <= 0x7a) || char === 0x5f || char >= 0x80;
const isDigit = (char: number) => char >= 0x30 && char <= 0x39;

/** After the quote that closes the one at `at` ('' or "" inside is the quote itself). */
function quotedEnd(sql: Buffer, at: number, backslashEscapes: boolean): number {
  const quote = sql[at]!;
  for (let i = at + 1; i < sql.length; i++) {
    if (backslashEscapes && sql[i] === byte('\\')) i++;
    else if (sql[i] === quote) {
      if (sql[i + 1] !== quote) return i + 1;
      i++;
    }
  }
  return sql.length;
}

/** After the comment starting at `at`: PostgreSQL's block comments nest. */
function blockCommentEnd(sql: Buffer, at: number): number {
  let depth = 0;
  for (let i = at; i < sql.length - 1; i++) {
    if (sql[i] === byte('/') && sql[i + 1] === byte('*')) {
      depth++;
      i++;
    } else if (sql[i] === byte('*') && sql[i + 1] === byte('/')) {
      i++;
      if (--depth === 0) return i + 1;
    }
  }
  return sql.length;
}

/** After a $tag$ ... $tag$ string starting at `at`, or after the '$' when it starts none. */
function dollarEnd(sql: Buffer, at: number): number {
  let end = at + 1;
  if (isDigit(sql[end] ?? 0)) return end; // a parameter, $1: a tag never starts with a digit
  while (end < sql.length && (isIdentifierStart(sql[end]!) || isDigit(sql[end]!))) end++;
  if (sql[end] !== byte('$')) return at + 1;
  const tag = sql.subarray(at, end + 1);
  const close = sql.indexOf(tag, end + 1);
  return close < 0 ? sql.length : close + tag.length;
}
