/**
 * PostgreSQL's frontend/backend protocol (version 3) as the relay sees one connection. A decoder
 * per direction cuts the bytes into whole messages, so the relay can hold a statement before the
 * database runs it or an answer before the program sees it, and names what exactly-once depends
 * on: which SQL a message runs (BEGIN, a write, COMMIT, ROLLBACK) and what the server says it did
 * (CommandComplete, ReadyForQuery, ErrorResponse). The reference is the "Frontend/Backend
 * Protocol" chapter of PostgreSQL's documentation.
 *
 * The program's first message has no type byte (StartupMessage, SSLRequest, GSSENCRequest,
 * CancelRequest); every later message in either direction is a type byte, then an int32 length
 * that counts itself, then the body. An accepted SSLRequest or GSSENCRequest turns the rest of the
 * connection into TLS or GSSAPI the relay cannot read: the server answers with one unframed byte,
 * which only the relay can carry from one decoder to the other (expectEncryptionAnswer, encrypted).
 *
 * Strings a message hands out are decoded only as far as MAX_TEXT characters. The program's own
 * (sql, statement and portal names) are kept raw, control characters included, and the relay
 * prints them through printable(); the server's error text is made printable here.
 */
import { printable, WireProtocolError, type WireDecoder, type WireSegment } from './contract.ts';
import { classifyBytes, type SqlStatementKind } from './sql-statements.ts';

export { classifySql, type SqlStatementKind } from './sql-statements.ts';

export type PostgresFrontendMessage =
  | { kind: 'startup' }
  | { kind: 'encryption-request'; method: 'ssl' | 'gss' }
  | { kind: 'cancel' }
  /** A simple Query: `statements` are its statements' kinds in order, `statement` the first ('other' when empty). */
  | { kind: 'query'; sql: string; statement: SqlStatementKind; statements: SqlStatementKind[] }
  | { kind: 'parse'; name: string; sql: string; statement: SqlStatementKind }
  | { kind: 'bind'; portal: string; statementName: string }
  /** `sql` is null when the portal's statement was never seen parsed (a prepared statement of SQL's PREPARE, say). */
  | { kind: 'execute'; portal: string; sql: string | null; statement: SqlStatementKind }
  | { kind: 'sync' }
  | { kind: 'terminate' }
  /** Any other message (password and SASL, Describe, Close, Flush, CopyData ...); `type` is its type byte. */
  | { kind: 'other'; type: string };

export type PostgresBackendMessage =
  | { kind: 'encryption-answer'; accepted: boolean }
  /**
   * `statement` is read from the tag: "ROLLBACK" is also the tag of ROLLBACK TO SAVEPOINT and of
   * a COMMIT that ended a failed transaction (ReadyForQuery's status tells them apart). `rows`:
   * the count of INSERT, UPDATE, DELETE, MERGE and COPY tags, null for other tags.
   */
  | { kind: 'command-complete'; tag: string; statement: SqlStatementKind; rows: number | null }
  | { kind: 'ready'; status: 'idle' | 'transaction' | 'failed' }
  | { kind: 'error'; code: string; message: string }
  | { kind: 'other'; type: string };

export interface PostgresDecoderOptions {
  /** A message longer than this (type byte and length included) ends the connection. */
  maxMessageBytes?: number;
}

const MiB = 1024 * 1024;
const DEFAULT_MAX_FRONTEND_BYTES = 16 * MiB;
/** The protocol allows 1 GiB; a lab's results are far smaller, and the relay holds a message whole. */
const DEFAULT_MAX_BACKEND_BYTES = 64 * MiB;
const MAX_TEXT = 2000;
/** Statements and portals remembered per connection: a program that names a new one per query cannot grow the relay. */
const MAX_REMEMBERED = 1000;
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const byte = (char: string) => char.charCodeAt(0);

/** What both directions share: pending bytes, typed-message framing, passing through once encrypted. */
abstract class PostgresDecoder<Message> implements WireDecoder<Message> {
  /** Bytes received and not yet handed out, as they came. */
  private pending: Buffer[] = [];
  protected pendingBytes = 0;
  /** Set once the rest of the stream cannot be read (encrypted, or after a CancelRequest): it passes through as it comes. */
  protected unread = false;
  /** A broken frame leaves the stream unreadable: every later push refuses the same way. */
  private failure: WireProtocolError | null = null;

  protected constructor(
    protected readonly maxMessageBytes: number,
    protected readonly sender: 'client' | 'server',
  ) {}

  push(chunk: Buffer): WireSegment<Message, Buffer>[] {
    if (this.failure) throw this.failure;
    if (chunk.length > 0) this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const segments: WireSegment<Message, Buffer>[] = [];
    try {
      for (let segment = this.next(); segment; segment = this.next()) segments.push(segment);
    } catch (err) {
      if (err instanceof WireProtocolError) this.failure = err;
      throw err;
    }
    if (this.unread) {
      for (const bytes of this.pending) segments.push({ bytes, message: null });
      [this.pending, this.pendingBytes] = [[], 0];
    }
    return segments;
  }

  /** The next whole segment, or null until more bytes arrive (or once they can no longer be read). */
  protected abstract next(): WireSegment<Message, Buffer> | null;

  /**
   * At least the first `count` pending bytes (count <= pendingBytes). Pieces are joined only when
   * the first is too short, so a message that came in pieces is copied at most twice, and the
   * messages after it in one chunk are views of that chunk.
   */
  protected peek(count: number): Buffer {
    if (this.pending[0]!.length < count) this.pending = [Buffer.concat(this.pending, this.pendingBytes)];
    return this.pending[0]!;
  }

  protected take(count: number): Buffer {
    const all = this.peek(count);
    if (all.length > count) this.pending[0] = all.subarray(count);
    else this.pending.shift();
    this.pendingBytes -= count;
    return all.subarray(0, count);
  }

  /** The next whole typed message (type byte, int32 length, body), or null until all of it has arrived. */
  protected takeMessage(): Buffer | null {
    if (this.unread || this.pendingBytes < 5) return null;
    const head = this.peek(5);
    const length = head.readInt32BE(1);
    const what = `PostgreSQL ${this.sender} message ${typeName(head[0]!)}`;
    if (length < 4) throw new WireProtocolError(`${what} declares a length of ${length}, less than the 4 bytes of the length itself`);
    this.checkSize(what, 1 + length);
    return this.pendingBytes < 1 + length ? null : this.take(1 + length);
  }

  protected checkSize(what: string, bytes: number): void {
    if (bytes <= this.maxMessageBytes) return;
    const limit = this.maxMessageBytes % MiB === 0 ? `${this.maxMessageBytes / MiB} MiB` : `${this.maxMessageBytes} bytes`;
    throw new WireProtocolError(`${what} of ${bytes} bytes is over the relay's limit of ${limit}`);
  }
}

/** A parsed statement as the relay keeps it, by statement name and by the portals bound to it. */
type Prepared = { sql: string; statement: SqlStatementKind };

/** Program → server. */
export class PostgresFrontendDecoder extends PostgresDecoder<PostgresFrontendMessage> {
  /** Until the StartupMessage, messages have no type byte (an SSLRequest answered 'N' is followed by another). */
  private startup = true;
  private readonly statements = new Map<string, Prepared>();
  /** A portal runs the statement it was bound to, even if that name is parsed again or closed later. */
  private readonly portals = new Map<string, Prepared | null>();

  constructor(options: PostgresDecoderOptions = {}) {
    super(options.maxMessageBytes ?? DEFAULT_MAX_FRONTEND_BYTES, 'client');
  }

  /**
   * The server accepted the SSLRequest or GSSENCRequest ('S' or 'G'): everything after it is
   * encrypted. The program waits for the answer before it sends more; bytes already pending pass with the next push.
   */
  encrypted(): void {
    this.unread = true;
  }

  protected next(): WireSegment<PostgresFrontendMessage, Buffer> | null {
    if (!this.startup) {
      const frame = this.takeMessage();
      return frame && { bytes: frame, message: this.read(frame) };
    }
    if (this.unread || this.pendingBytes < 4) return null;
    const length = this.peek(4).readInt32BE(0);
    if (length < 8) throw new WireProtocolError(`PostgreSQL startup packet declares a length of ${length}, less than the 8 bytes of its length and code`);
    this.checkSize('PostgreSQL startup packet', length);
    if (this.pendingBytes < length) return null;
    const bytes = this.take(length);
    const code = bytes.readInt32BE(4);
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) return { bytes, message: { kind: 'encryption-request', method: code === SSL_REQUEST ? 'ssl' : 'gss' } };
    if (code === CANCEL_REQUEST) {
      this.unread = true; // the server closes a cancel connection: nothing more is meant to follow
      return { bytes, message: { kind: 'cancel' } };
    }
    this.startup = false;
    return { bytes, message: { kind: 'startup' } };
  }

  private read(frame: Buffer): PostgresFrontendMessage {
    const type = frame[0]!;
    if (type === byte('Q')) {
      const [sql] = strings(frame, 5, 1);
      const statements = classifyBytes(sql!);
      return { kind: 'query', sql: boundedText(sql!), statement: statements[0] ?? 'other', statements };
    }
    if (type === byte('P')) {
      const [name, sql] = strings(frame, 5, 2);
      // One statement per Parse (the server refuses more): the first one is its kind.
      const prepared = { sql: boundedText(sql!), statement: classifyBytes(sql!, 1)[0] ?? 'other' };
      remember(this.statements, boundedText(name!), prepared);
      return { kind: 'parse', name: boundedText(name!), ...prepared };
    }
    if (type === byte('B')) {
      const [portal, statementName] = strings(frame, 5, 2).map(boundedText) as [string, string];
      remember(this.portals, portal, this.statements.get(statementName) ?? null);
      return { kind: 'bind', portal, statementName };
    }
    if (type === byte('E')) {
      const portal = boundedText(strings(frame, 5, 1)[0]!);
      const prepared = this.portals.get(portal);
      return { kind: 'execute', portal, sql: prepared?.sql ?? null, statement: prepared?.statement ?? 'other' };
    }
    if (type === byte('C')) {
      // Close: forget the statement or portal, so a later one of the same name is not mistaken for it.
      const name = boundedText(strings(frame, 6, 1)[0]!);
      if (frame[5] === byte('S')) this.statements.delete(name);
      if (frame[5] === byte('P')) this.portals.delete(name);
    }
    if (type === byte('S')) return { kind: 'sync' };
    if (type === byte('X')) return { kind: 'terminate' };
    return { kind: 'other', type: String.fromCharCode(type) };
  }
}

/** Server → program. */
export class PostgresBackendDecoder extends PostgresDecoder<PostgresBackendMessage> {
  private answerExpected = false;
  /** A CopyInResponse was sent since the last CommandComplete: its "COPY n" tag counts rows written. */
  private copyingIn = false;

  constructor(options: PostgresDecoderOptions = {}) {
    super(options.maxMessageBytes ?? DEFAULT_MAX_BACKEND_BYTES, 'server');
  }

  /** The program sent an SSLRequest or GSSENCRequest: the server's next byte is its unframed answer. */
  expectEncryptionAnswer(): void {
    this.answerExpected = true;
  }

  protected next(): WireSegment<PostgresBackendMessage, Buffer> | null {
    if (this.answerExpected && !this.unread && this.pendingBytes > 0) {
      const first = this.peek(1)[0]!;
      this.answerExpected = false;
      // A server that fails before answering (out of memory, say) sends an ErrorResponse instead: framed as usual.
      if (first === byte('S') || first === byte('G') || first === byte('N')) {
        this.unread = first !== byte('N');
        return { bytes: this.take(1), message: { kind: 'encryption-answer', accepted: this.unread } };
      }
    }
    const frame = this.takeMessage();
    return frame && { bytes: frame, message: this.read(frame) };
  }

  private read(frame: Buffer): PostgresBackendMessage {
    const type = frame[0]!;
    if (type === byte('C')) {
      const [tagBytes] = strings(frame, 5, 1);
      const tag = boundedText(tagBytes!);
      const rows = /^(?:INSERT|UPDATE|DELETE|MERGE|COPY) (?:\d+ )?(\d+)$/.exec(tag);
      // A "COPY n" tag does not say the direction: COPY ... FROM STDIN is the one that asked for data.
      const statement = this.copyingIn && tag.startsWith('COPY ') ? 'write' : (classifyBytes(tagBytes!, 1)[0] ?? 'other');
      this.copyingIn = false;
      return { kind: 'command-complete', tag: printable(tag), statement, rows: rows ? Number(rows[1]) : null };
    }
    if (type === byte('Z')) {
      const status = READY_STATUS.get(frame[5]);
      if (!status) throw new WireProtocolError(`PostgreSQL ReadyForQuery has no known status (I, T or E)`);
      return { kind: 'ready', status };
    }
    if (type === byte('E')) {
      const error = { kind: 'error' as const, code: '', message: '' };
      // Fields: a type byte and a string each, until a zero type byte.
      for (let at = 5; frame[at] !== 0; ) {
        if (at >= frame.length) throw new WireProtocolError(`PostgreSQL ErrorResponse ends without the zero byte after its fields`);
        const [value] = strings(frame, at + 1, 1);
        if (frame[at] === byte('C')) error.code = printable(boundedText(value!), 16);
        if (frame[at] === byte('M')) error.message = printable(boundedText(value!), 200);
        at += value!.length + 2;
      }
      return error;
    }
    if (type === byte('G')) this.copyingIn = true;
    return { kind: 'other', type: String.fromCharCode(type) };
  }
}

const READY_STATUS = new Map<number | undefined, 'idle' | 'transaction' | 'failed'>([[byte('I'), 'idle'], [byte('T'), 'transaction'], [byte('E'), 'failed']]);

function typeName(type: number): string {
  return type > 0x20 && type < 0x7f ? `'${String.fromCharCode(type)}'` : `0x${type.toString(16).padStart(2, '0')}`;
}

/** The `count` NUL-terminated strings from `at`, as bytes; a string without its NUL breaks the frame. */
function strings(frame: Buffer, at: number, count: number): Buffer[] {
  const found: Buffer[] = [];
  while (found.length < count) {
    const end = at < frame.length ? frame.indexOf(0, at) : -1;
    if (end < 0) throw new WireProtocolError(`PostgreSQL message ${typeName(frame[0]!)} has a string without its NUL terminator`);
    found.push(frame.subarray(at, end));
    at = end + 1;
  }
  return found;
}

/** UTF-8 text, at most MAX_TEXT characters: at most 4 bytes make a character, so no more are decoded. */
function boundedText(bytes: Buffer): string {
  const text = bytes.toString('utf8', 0, Math.min(bytes.length, 4 * MAX_TEXT));
  if (text.length <= MAX_TEXT) return text;
  const lastCode = text.charCodeAt(MAX_TEXT - 1);
  return text.slice(0, lastCode >= 0xd800 && lastCode <= 0xdbff ? MAX_TEXT - 1 : MAX_TEXT); // never half a surrogate pair
}

function remember<Value>(map: Map<string, Value>, name: string, value: Value): void {
  map.delete(name); // re-inserted as the newest
  map.set(name, value);
  if (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value!);
}
