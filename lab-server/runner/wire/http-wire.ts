/**
 * HTTP/1.1 for the relay: streaming decoders that cut each direction of a plain-HTTP connection
 * (keep-alive, possibly pipelined) between a sandboxed program and a lab's HTTP API into segments
 * by RFC 9112 message framing, so the relay can hold a request or a response at its head.
 *
 * A message's head (start line, field lines, empty line) is one segment carrying the decoded
 * message; its body passes through as segments with message null, sliced from the chunks as they
 * arrive (never buffered whole). Only an unfinished head, a chunk-size line or a trailer line is
 * kept between pushes.
 *
 * Strict where leniency would let the two ends disagree on where a message ends (request
 * smuggling): a bare LF or CR, obs-fold, Content-Length with Transfer-Encoding, differing
 * Content-Length values, a malformed chunk size all throw WireProtocolError, which ends the
 * connection. Where framing cannot be followed cheaply (CONNECT, Upgrade, 101, a body running to
 * the close) the decoder stops reading and passes the rest of the connection through unread:
 * nothing after that point can be held, but nothing is mis-framed either.
 */
import { printable, WireProtocolError, type WireDecoder, type WireSegment } from './contract.ts';

export const DEFAULT_MAX_HEAD_BYTES = 64 * 1024;

export interface HttpRequestMessage {
  kind: 'request';
  method: string;
  /** Bounded and printable: for the timeline, not for routing. */
  target: string;
  version: string;
}

export interface HttpResponseMessage {
  kind: 'response';
  status: number;
  reason: string;
}

export interface HttpDecoderOptions {
  /** Most bytes of one head (start line to empty line), of one chunk-size line, or of one trailer section. */
  maxHeadBytes?: number;
}

/** How the body after a head is delimited: its length in bytes (0: none), chunked, or the rest of the connection. */
type BodyFraming = number | 'chunked' | 'rest';

/** The field lines that decide framing, already checked against smuggling. */
interface FramingFields {
  contentLength: number | null;
  /** 'chunked': chunked is the final coding; 'not-chunked': codings without chunked (length runs to the close). */
  transferEncoding: 'chunked' | 'not-chunked' | null;
  upgrade: boolean;
}

const TCHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
const TOKEN = new RegExp(`^${TCHAR}+$`);
const VERSION = /^HTTP\/1\.\d$/;
/** chunk-size [ chunk-ext ], RFC 9112 §7.1.1: each extension `;name`, `;name=token` or `;name="quoted"`, with optional whitespace. */
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t \\x21-\\x7e\\x80-\\xff])*"';
const CHUNK_EXT = `[ \\t]*;[ \\t]*${TCHAR}+(?:[ \\t]*=[ \\t]*(?:${TCHAR}+|${QUOTED}))?`;
const CHUNK_SIZE_LINE = new RegExp(`^([0-9A-Fa-f]+)(?:${CHUNK_EXT})*[ \\t]*$`);
/** 13 hex digits (2^52) or 15 decimal digits stay exact in a JS number and are far beyond any real body. */
const MAX_HEX_DIGITS = 13;
const MAX_DECIMAL_DIGITS = 15;

type Mode = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-data-end' | 'trailer' | 'rest';

/** The framing state machine both directions share; a subclass reads the start line and picks the body framing. */
abstract class HttpMessageDecoder<Message> implements WireDecoder<Message> {
  protected readonly maxHeadBytes: number;
  private mode: Mode = 'head';
  /** Copies of the bytes of an unfinished head (copies: the caller may reuse its chunks). */
  private heldHead: Buffer[] = [];
  private heldHeadBytes = 0;
  /** Bytes of the head line under way, and its last byte: to spot the empty line across chunk boundaries. */
  private headLineBytes = 0;
  private headLastByte = -1;
  /** Body bytes left in the Content-Length body or the current chunk. */
  private remaining = 0;
  /** The chunk-size or trailer line under way (latin1), and the bytes of its section so far (for the limit). */
  private line = '';
  private sectionBytes = 0;
  /** How many bytes of the CRLF after a chunk's data have been seen. */
  private chunkEndSeen = 0;

  constructor(options: HttpDecoderOptions = {}) {
    this.maxHeadBytes = options.maxHeadBytes ?? DEFAULT_MAX_HEAD_BYTES;
  }

  /** Reads a head's start line and the framing fields; returns the message and how its body is delimited. */
  protected abstract readHead(startLine: string, fields: FramingFields): { message: Message; body: BodyFraming };

  push(chunk: Buffer): WireSegment<Message, Buffer>[] {
    const segments: WireSegment<Message, Buffer>[] = [];
    let pos = 0;
    let bodyStart = 0; // start of the body (or pass-through) bytes not yet put in a segment
    while (pos < chunk.length) {
      if (this.mode !== 'head') {
        pos = this.skipBody(chunk, pos);
        continue;
      }
      if (pos > bodyStart) segments.push({ bytes: chunk.subarray(bodyStart, pos), message: null });
      const headEnd = this.findHeadEnd(chunk, pos);
      if (headEnd < 0) {
        this.heldHead.push(Buffer.from(chunk.subarray(pos)));
        this.heldHeadBytes += chunk.length - pos;
        return segments;
      }
      const tail = chunk.subarray(pos, headEnd);
      const bytes = this.heldHead.length ? Buffer.concat([...this.heldHead, tail]) : tail;
      this.heldHead = [];
      this.heldHeadBytes = 0;
      segments.push({ bytes, message: this.decodeHead(bytes) });
      pos = bodyStart = headEnd;
    }
    if (pos > bodyStart) segments.push({ bytes: chunk.subarray(bodyStart, pos), message: null });
    return segments;
  }

  /** The index just past the head's empty line, or -1 when the head goes on past this chunk. */
  private findHeadEnd(chunk: Buffer, from: number): number {
    let lineStart = from;
    for (;;) {
      const lf = chunk.indexOf(0x0a, lineStart);
      const end = lf < 0 ? chunk.length : lf + 1;
      if (this.heldHeadBytes + end - from > this.maxHeadBytes) {
        throw new WireProtocolError(`HTTP head over the ${this.maxHeadBytes}-byte limit (maxHeadBytes)`);
      }
      if (lf < 0) {
        this.headLineBytes += chunk.length - lineStart;
        if (chunk.length > lineStart) this.headLastByte = chunk[chunk.length - 1];
        return -1;
      }
      const lineBytes = this.headLineBytes + lf - lineStart; // without the LF
      const lastByte = lf > lineStart ? chunk[lf - 1] : this.headLastByte;
      this.headLineBytes = 0;
      this.headLastByte = -1;
      // The empty line: CRLF, or a bare LF that decodeHead then rejects.
      if (lineBytes === 0 || (lineBytes === 1 && lastByte === 0x0d)) return lf + 1;
      lineStart = lf + 1;
    }
  }

  /** The message of a whole head (null for an empty line before a start line); sets up its body. */
  private decodeHead(bytes: Buffer): Message | null {
    const text = bytes.toString('latin1');
    // RFC 9112 §2.2: a server SHOULD ignore an empty line before a request line; it passes through unread.
    if (text === '\r\n') return null;
    if (!text.endsWith('\r\n\r\n')) throw new WireProtocolError('HTTP head with a bare LF line ending');
    const lines = text.slice(0, -4).split('\r\n');
    // Strict line endings: a bare LF (or CR) is read as a line break by some parsers and not by others.
    if (lines.some((line) => line.includes('\n') || line.includes('\r'))) {
      throw new WireProtocolError('HTTP head with a bare LF or CR');
    }
    const fields = readFramingFields(lines.slice(1), lines[0]);
    const { message, body } = this.readHead(lines[0], fields);
    this.startBody(body);
    return message;
  }

  private startBody(body: BodyFraming): void {
    if (body === 'rest') this.mode = 'rest';
    else if (body === 'chunked') this.startLine('chunk-size');
    else if (body > 0) {
      this.mode = 'length';
      this.remaining = body;
    } else this.mode = 'head';
  }

  private startLine(mode: 'chunk-size' | 'trailer'): void {
    this.mode = mode;
    this.line = '';
    this.sectionBytes = 0;
  }

  /** Walks body bytes from `pos`; returns where it stopped (the chunk's end, or the end of the body). */
  private skipBody(chunk: Buffer, pos: number): number {
    switch (this.mode) {
      case 'rest':
        return chunk.length;
      case 'length':
      case 'chunk-data': {
        const take = Math.min(this.remaining, chunk.length - pos);
        this.remaining -= take;
        if (this.remaining === 0) {
          this.chunkEndSeen = 0;
          this.mode = this.mode === 'length' ? 'head' : 'chunk-data-end';
        }
        return pos + take;
      }
      case 'chunk-data-end': {
        if (chunk[pos] !== (this.chunkEndSeen === 0 ? 0x0d : 0x0a)) throw new WireProtocolError('HTTP chunk data not followed by CRLF');
        if (++this.chunkEndSeen === 2) this.startLine('chunk-size');
        return pos + 1;
      }
      case 'chunk-size':
      case 'trailer':
        return this.readBodyLine(chunk, pos);
      default:
        throw new Error(`unexpected mode ${this.mode}`);
    }
  }

  /** Reads a chunk-size or trailer line, possibly across chunks; acts on it once whole. */
  private readBodyLine(chunk: Buffer, pos: number): number {
    const lf = chunk.indexOf(0x0a, pos);
    const end = lf < 0 ? chunk.length : lf;
    this.sectionBytes += end - pos + (lf < 0 ? 0 : 1);
    if (this.sectionBytes > this.maxHeadBytes) {
      const what = this.mode === 'trailer' ? 'trailer section' : 'chunk-size line';
      throw new WireProtocolError(`HTTP ${what} over the ${this.maxHeadBytes}-byte limit (maxHeadBytes)`);
    }
    this.line += chunk.toString('latin1', pos, end);
    if (lf < 0) return chunk.length;
    if (!this.line.endsWith('\r') || this.line.indexOf('\r') !== this.line.length - 1) {
      throw new WireProtocolError('HTTP chunked body with a bare LF or CR');
    }
    const line = this.line.slice(0, -1);
    this.line = '';
    if (this.mode === 'chunk-size') {
      const size = CHUNK_SIZE_LINE.exec(line)?.[1].replace(/^0+(?=.)/, '');
      if (size === undefined || size.length > MAX_HEX_DIGITS) {
        throw new WireProtocolError(`malformed HTTP chunk size line: "${printable(line, 60)}"`);
      }
      this.remaining = parseInt(size, 16);
      if (this.remaining === 0) this.startLine('trailer');
      else this.mode = 'chunk-data';
    } else if (line === '') {
      this.mode = 'head';
    } else {
      readFieldLine(line); // a trailer field: checked like a header field, otherwise not read
    }
    return lf + 1;
  }
}

/** Client → server. After CONNECT or any Upgrade field, the rest of the connection passes through unread. */
export class HttpRequestDecoder extends HttpMessageDecoder<HttpRequestMessage> {
  protected readHead(startLine: string, fields: FramingFields): { message: HttpRequestMessage; body: BodyFraming } {
    const parts = startLine.split(' ');
    if (parts.length !== 3 || !TOKEN.test(parts[0]) || parts[1] === '' || !VERSION.test(parts[2])) {
      throw new WireProtocolError(`malformed HTTP request line: "${printable(startLine, 80)}"`);
    }
    const [method, rawTarget, version] = parts;
    if (fields.transferEncoding === 'not-chunked') {
      throw new WireProtocolError('HTTP request with a Transfer-Encoding whose final coding is not chunked');
    }
    // The target is only shown, never used for framing: any byte but SP is let through, made printable.
    const message: HttpRequestMessage = { kind: 'request', method: printable(method, 40), target: printable(rawTarget, 300), version };
    // Following a tunnel or a switched protocol would mean knowing whether the server accepted it;
    // passing everything after the head through unread is always safe.
    if (method === 'CONNECT' || fields.upgrade) return { message, body: 'rest' };
    return { message, body: fields.transferEncoding === 'chunked' ? 'chunked' : (fields.contentLength ?? 0) };
  }
}

/**
 * Server → client. Whether a response has a body depends on its request (HEAD, CONNECT): the relay
 * calls requestSent for every request head, in order, before the server can answer it.
 */
export class HttpResponseDecoder extends HttpMessageDecoder<HttpResponseMessage> {
  /** Methods of the requests not answered yet, oldest first. */
  private readonly pendingMethods: string[] = [];

  requestSent(method: string): void {
    this.pendingMethods.push(method);
  }

  protected readHead(startLine: string, fields: FramingFields): { message: HttpResponseMessage; body: BodyFraming } {
    // The SP before an empty reason is required by RFC 9112 but often left out; the reason does not frame anything.
    const parts = /^(HTTP\/1\.\d) ([1-9]\d\d)(?: (.*))?$/.exec(startLine);
    if (!parts) throw new WireProtocolError(`malformed HTTP status line: "${printable(startLine, 80)}"`);
    const status = Number(parts[2]);
    const message: HttpResponseMessage = { kind: 'response', status, reason: printable(parts[3] ?? '') };
    // An interim response answers nothing yet and never has a body (RFC 9112 §6.3).
    if (status < 200 && status !== 101) return { message, body: 0 };
    // No request to pair with (an unprompted 408 before a close, or requests passed through unread):
    // its framing cannot be known, so the rest passes through unread.
    const method = this.pendingMethods.shift();
    if (method === undefined || status === 101) return { message, body: 'rest' };
    if (method === 'CONNECT' && status < 300) return { message, body: 'rest' };
    if (method === 'HEAD' || status === 204 || status === 304) return { message, body: 0 };
    if (fields.transferEncoding === 'chunked') return { message, body: 'chunked' };
    // A body with neither chunked nor Content-Length runs until the server closes the connection.
    if (fields.transferEncoding === 'not-chunked' || fields.contentLength === null) return { message, body: 'rest' };
    return { message, body: fields.contentLength };
  }
}

/** The name and value of a header (or trailer) field line; throws on obs-fold and malformed lines. */
function readFieldLine(line: string): { name: string; value: string } {
  if (line.startsWith(' ') || line.startsWith('\t')) {
    throw new WireProtocolError('HTTP header line folded (obs-fold), which RFC 9112 makes malformed');
  }
  const colon = line.indexOf(':');
  const name = line.slice(0, Math.max(colon, 0));
  const value = trimWhitespace(line.slice(colon + 1));
  if (!TOKEN.test(name) || value.includes('\0')) throw new WireProtocolError(`malformed HTTP header line: "${printable(line, 80)}"`);
  return { name: name.toLowerCase(), value };
}

/** Without the leading and trailing SP and HTAB. A loop: a regex for it backtracks quadratically on long runs of blanks. */
function trimWhitespace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++;
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return text.slice(start, end);
}

/**
 * The framing fields of a head, checked for what lets two parsers disagree on a message's end
 * (RFC 9112 §6.1, §6.3): Content-Length with Transfer-Encoding, differing Content-Length values,
 * chunked applied twice or not last, Transfer-Encoding in HTTP/1.0. Both directions are held to it.
 */
function readFramingFields(fieldLines: string[], startLine: string): FramingFields {
  const lengths: string[] = [];
  const codings: string[] = [];
  let hasTransferEncoding = false;
  let upgrade = false;
  for (const line of fieldLines) {
    const { name, value } = readFieldLine(line);
    if (name === 'content-length') lengths.push(...value.split(',').map((item) => item.trim()));
    else if (name === 'transfer-encoding') {
      hasTransferEncoding = true;
      for (const item of value.split(',')) {
        const coding = item.split(';')[0].trim().toLowerCase();
        if (coding !== '') codings.push(coding);
      }
    } else if (name === 'upgrade') upgrade = true;
  }
  let contentLength: number | null = null;
  for (const item of lengths) {
    if (!/^\d+$/.test(item) || item.replace(/^0+(?=.)/, '').length > MAX_DECIMAL_DIGITS) {
      throw new WireProtocolError(`malformed HTTP Content-Length: "${printable(item, 40)}"`);
    }
    if (contentLength !== null && contentLength !== Number(item)) {
      throw new WireProtocolError('HTTP message with differing Content-Length values (request smuggling)');
    }
    contentLength = Number(item);
  }
  if (!hasTransferEncoding) return { contentLength, transferEncoding: null, upgrade };
  if (contentLength !== null) {
    throw new WireProtocolError('HTTP message with both Content-Length and Transfer-Encoding (request smuggling)');
  }
  if (/ HTTP\/1\.0$|^HTTP\/1\.0 /.test(startLine)) throw new WireProtocolError('HTTP/1.0 message with Transfer-Encoding');
  const chunkedAt = codings.indexOf('chunked');
  if (codings.length === 0 || (chunkedAt >= 0 && chunkedAt !== codings.length - 1)) {
    throw new WireProtocolError('HTTP Transfer-Encoding empty, or with chunked not once and last');
  }
  return { contentLength, transferEncoding: chunkedAt >= 0 ? 'chunked' : 'not-chunked', upgrade };
}
