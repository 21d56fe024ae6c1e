/**
 * What the relay's protocol decoders share. The relay (program/sandbox/relay.ts) copies each
 * connection of a sandboxed program byte for byte; a decoder cuts each direction of it into
 * segments, each one whole protocol message (or a stretch of bytes the decoder passes through
 * without reading), so the relay can hold a message exactly before it is delivered: a request
 * before the server sees it ("before X"), a response before the program sees it ("after X").
 *
 * Decoders are pure: bytes in, segments out, no I/O. They never change a byte, and what they
 * cannot name (an unknown api key, a message type they do not read) passes through as it is.
 */
import { KafkaIqError } from '../../../src/shared/errors.ts';

/**
 * One whole message of a connection, or bytes passed through unread (message null). A decoder may
 * give the bytes as the views of the chunks they arrived in, so a large frame is never copied.
 */
export interface WireSegment<Message, Bytes extends Buffer | Buffer[] = Buffer | Buffer[]> {
  bytes: Bytes;
  message: Message | null;
}

/** A segment's bytes as one list. */
export const segmentBuffers = (segment: WireSegment<unknown>): Buffer[] => (Array.isArray(segment.bytes) ? segment.bytes : [segment.bytes]);

/** One direction of one connection. */
export interface WireDecoder<Message> {
  /** Takes the next bytes; returns the segments completed by them, in order (possibly none). */
  push(chunk: Buffer): WireSegment<Message>[];
}

/**
 * A frame that breaks its protocol (truncated, malformed, over the size limit). It ends that
 * connection only: never the relay, the grade or the server. `message` is one line for the
 * timeline, already bounded and free of control characters.
 */
export class WireProtocolError extends KafkaIqError {
  constructor(message: string) {
    super('INVALID_INPUT', printable(message, 200));
    this.name = 'WireProtocolError';
  }
}

/** Text that came from the program, fit for a timeline line: control characters replaced, bounded. */
export function printable(text: string, max = 120): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}
