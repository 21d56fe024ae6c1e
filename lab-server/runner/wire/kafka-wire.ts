/**
 * Kafka's protocol as the relay sees one connection: size-prefixed frames in each direction, a
 * request header on every request, the correlation id that pairs a response with its request, and
 * the bodies exactly-once depends on (kafka-bodies.ts). Kafka's protocol guide
 * (https://kafka.apache.org/protocol) is the reference.
 *
 * One KafkaConnectionDecoder per connection gives the two directions' decoders, which share the
 * requests in flight: a response is known only by the request it answers.
 *
 * What the decoders refuse ends that connection only (WireProtocolError): a frame over the
 * broker's request limit, a frame shorter than a header, and a body of an api exactly-once
 * depends on that breaks its layout (the broker might read it differently from the relay, and
 * the relay would lose sight of what the program did). Anything else it cannot name (an unknown
 * api key, SASL tokens of the original handshake) passes through as it is.
 */
import { DynamicBuffer } from '@platformatic/dynamic-buffer';
import { printable, WireProtocolError, type WireDecoder, type WireSegment } from './contract.ts';
import { API_NAMES, FIRST_FLEXIBLE, readRequestBody, readResponseBody, type ApiName, type KafkaRequestBody, type KafkaResponseBody } from './kafka-bodies.ts';

export interface KafkaRequest {
  kind: 'request';
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
  /** The api's name when the relay knows it. */
  api: ApiName | null;
  body: KafkaRequestBody | null;
  /** The relay holds the whole frame before the server sees a byte of it, so it may answer in the server's place. */
  whole: boolean;
}

export interface KafkaResponse {
  kind: 'response';
  correlationId: number;
  /** The request it answers. */
  apiKey: number;
  apiVersion: number;
  api: ApiName | null;
  body: KafkaResponseBody | null;
  /** The body of the request it answers, when the relay read it. */
  request: KafkaRequestBody | null;
  /** The relay's own answer to a request it never forwarded (kafka-answers.ts), not the server's. */
  byRelay?: true;
}

export interface KafkaDecoderLimits {
  /** A request frame larger than this is refused: the broker's socket.request.max.bytes. */
  maxRequestBytes: number;
  /** A response frame larger than this ends the connection (the broker's answers are bounded by the client's fetch sizes). */
  maxResponseBytes: number;
}

export const DEFAULT_KAFKA_LIMITS: KafkaDecoderLimits = { maxRequestBytes: 16 * 1024 * 1024, maxResponseBytes: 128 * 1024 * 1024 };
/** Requests a client may have in flight on one connection before the relay stops pairing answers (Kafka clients keep a handful). */
const MAX_IN_FLIGHT = 1024;

/** The bodies the relay reads. Other apis' frames pass with their header read and their body untouched. */
const READ_REQUESTS = new Set<ApiName>(['InitProducerId', 'Produce', 'AddPartitionsToTxn', 'AddOffsetsToTxn', 'TxnOffsetCommit', 'EndTxn', 'OffsetCommit', 'JoinGroup', 'SyncGroup', 'LeaveGroup', 'Heartbeat', 'ConsumerGroupHeartbeat']);
const READ_RESPONSES = new Set<ApiName>(['InitProducerId', 'Produce', 'AddPartitionsToTxn', 'AddOffsetsToTxn', 'TxnOffsetCommit', 'EndTxn', 'OffsetCommit', 'Metadata']);

/**
 * How a frame is handled, from its first bytes: 'read' frames are decoded once whole; 'pass'
 * frames only have their header read. `message` goes with the frame's first segment.
 */
type FrameHandling<M> = { handling: 'read'; decode: (frame: DynamicBuffer) => M | null; whole?: boolean } | { handling: 'pass'; message: M | null };

/**
 * Cuts one direction into size-prefixed frames, forwarding each frame's bytes as they arrive
 * (views of the chunks they came in, never copied). A frame to read is decoded when its last
 * bytes arrive, and its message goes with those last bytes: neither end can act on a frame it has
 * not received whole, so holding that last segment holds the whole message. A frame read `whole`
 * is not forwarded at all until it is complete, so the relay may answer it instead of forwarding it.
 * Between two frames, `between` may put in a frame of the relay's own (an answer in the server's place).
 */
class FrameSplitter<M> {
  private readonly pending = new DynamicBuffer();
  /** The frame being forwarded: bytes still to come, and for a frame to read, its bytes so far. */
  private current: { remaining: number; read: { decode: (frame: DynamicBuffer) => M | null; parts: DynamicBuffer; whole: boolean } | null } | null = null;

  constructor(
    private readonly maxBytes: number,
    private readonly what: string,
    /** The bytes a frame's handling is decided from (its size prefix included). */
    private readonly headBytes: number,
    private readonly classify: (head: DynamicBuffer, size: number) => FrameHandling<M>,
    private readonly between: () => WireSegment<M> | null = () => null,
  ) {}

  push(chunk: Buffer): WireSegment<M>[] {
    if (chunk.length) this.pending.append(chunk);
    const out: WireSegment<M>[] = [];
    for (;;) {
      const current = this.current;
      if (current) {
        const take = Math.min(current.remaining, this.pending.length);
        if (take === 0) break;
        const bytes = this.take(take);
        current.remaining -= take;
        if (current.read) for (const b of bytes) current.read.parts.append(b);
        if (current.remaining > 0) {
          if (!current.read?.whole) out.push({ bytes, message: null });
          continue;
        }
        this.current = null;
        const message = current.read ? current.read.decode(current.read.parts) : null;
        out.push({ bytes: current.read?.whole ? current.read.parts.buffers : bytes, message });
        continue;
      }
      const own = this.between();
      if (own) {
        out.push(own);
        continue;
      }
      if (this.pending.length < 4) break;
      const size = this.pending.readInt32BE(0);
      if (size < 0 || size > this.maxBytes) {
        throw new WireProtocolError(`Kafka ${this.what} of ${size} bytes is over the relay's limit of ${Math.round(this.maxBytes / 1024 / 1024)} MiB`);
      }
      const head = Math.min(4 + size, this.headBytes);
      if (this.pending.length < head) break;
      const handling = this.classify(this.pending.subarray(0, head), size);
      if (handling.handling === 'pass') {
        const take = Math.min(4 + size, this.pending.length);
        out.push({ bytes: this.take(take), message: handling.message });
        if (take < 4 + size) this.current = { remaining: 4 + size - take, read: null };
        continue;
      }
      this.current = { remaining: 4 + size, read: { decode: handling.decode, parts: new DynamicBuffer(), whole: handling.whole ?? false } };
    }
    return out;
  }

  /** The next `n` bytes, as views of the chunks they arrived in. */
  private take(n: number): Buffer[] {
    const bytes = this.pending.subarray(0, n).buffers;
    this.pending.consume(n);
    return bytes;
  }
}

/** Bytes of a request header up to its client id's length; a response's correlation id. */
const REQUEST_HEAD_BYTES = 14;
const RESPONSE_HEAD_BYTES = 8;

interface InFlight {
  apiKey: number;
  apiVersion: number;
  body: KafkaRequestBody | null;
  /** The relay's answer, when it answers this request in the broker's place. */
  answer?: { frame: Buffer; body: KafkaResponseBody };
}

/**
 * Both directions of one Kafka connection. `holdWhole`: whether a request of this api is held
 * whole before the broker sees it (the tap asks for it while a send error is armed).
 */
export class KafkaConnectionDecoder {
  /** The requests awaiting an answer, in the order they were sent: a broker answers in that order. */
  private readonly inFlight = new Map<number, InFlight>();
  readonly requests: WireDecoder<KafkaRequest>;
  readonly responses: WireDecoder<KafkaResponse>;

  constructor(
    limits: KafkaDecoderLimits = DEFAULT_KAFKA_LIMITS,
    private readonly holdWhole: (api: ApiName) => boolean = () => false,
  ) {
    this.requests = new FrameSplitter(limits.maxRequestBytes, 'request', REQUEST_HEAD_BYTES, (head, size) => this.request(head, size));
    this.responses = new FrameSplitter(limits.maxResponseBytes, 'response', RESPONSE_HEAD_BYTES, (head) => this.response(head), () => this.ownAnswer());
  }

  /**
   * Answers a request held whole with the relay's own frame, in the broker's place: the request is
   * never forwarded, and the answer reaches the program in the order a broker keeps, after the
   * answers to the requests sent before it (the responses decoder puts it in between frames).
   */
  answerInstead(request: KafkaRequest, frame: Buffer, body: KafkaResponseBody): void {
    const entry = this.inFlight.get(request.correlationId);
    if (!request.whole || !entry) throw new RangeError('only a request held whole and awaiting its answer can be answered by the relay');
    entry.answer = { frame, body };
  }

  /** The relay's answer due next, once every request before it has had the broker's answer. */
  private ownAnswer(): WireSegment<KafkaResponse> | null {
    const next = this.inFlight.entries().next();
    if (next.done || !next.value[1].answer) return null;
    const [correlationId, entry] = next.value;
    this.inFlight.delete(correlationId);
    const api = API_NAMES.get(entry.apiKey) ?? null;
    const message: KafkaResponse = { kind: 'response', correlationId, apiKey: entry.apiKey, apiVersion: entry.apiVersion, api, body: entry.answer!.body, request: entry.body, byRelay: true };
    return { bytes: entry.answer!.frame, message };
  }

  private request(head: DynamicBuffer, size: number): FrameHandling<KafkaRequest> {
    // The header: api key, api version, correlation id, client id (a classic nullable string in
    // every header version), then tagged fields in header v2 (flexible versions).
    if (head.length < REQUEST_HEAD_BYTES) return { handling: 'pass', message: null }; // a SASL token of the original handshake, say
    const apiKey = head.readInt16BE(4);
    const apiVersion = head.readInt16BE(6);
    const correlationId = head.readInt32BE(8);
    const clientIdLength = head.readInt16BE(12);
    const api = API_NAMES.get(apiKey) ?? null;
    if (!api || apiVersion < 0 || clientIdLength < -1 || REQUEST_HEAD_BYTES + Math.max(0, clientIdLength) > 4 + size) return { handling: 'pass', message: null };
    const base = { kind: 'request' as const, apiKey, apiVersion, correlationId, api };
    if (!READ_REQUESTS.has(api)) {
      this.expectAnswer(correlationId, apiKey, apiVersion, null);
      return { handling: 'pass', message: { ...base, clientId: null, body: null, whole: false } };
    }
    const whole = this.holdWhole(api);
    return {
      handling: 'read',
      whole,
      decode: (frame) => {
        let at = REQUEST_HEAD_BYTES + Math.max(0, clientIdLength);
        const clientId = clientIdLength < 0 ? null : printable(frame.toString('utf8', REQUEST_HEAD_BYTES, at));
        let body: KafkaRequestBody | null;
        try {
          if (apiVersion >= FIRST_FLEXIBLE[api]) at = skipTaggedFields(frame, at);
          body = readRequestBody(api, apiVersion, frame.subarray(at));
        } catch (err) {
          throw new WireProtocolError(`the relay cannot read this ${api} v${apiVersion} request (${(err as Error).message}): the connection is closed`);
        }
        // Produce with acks=0 gets no answer: nothing to pair.
        if (!(body?.api === 'Produce' && body.acks === 0)) this.expectAnswer(correlationId, apiKey, apiVersion, body);
        return { ...base, clientId, body, whole };
      },
    };
  }

  private expectAnswer(correlationId: number, apiKey: number, apiVersion: number, body: KafkaRequestBody | null): void {
    if (this.inFlight.size < MAX_IN_FLIGHT) this.inFlight.set(correlationId, { apiKey, apiVersion, body });
  }

  private response(head: DynamicBuffer): FrameHandling<KafkaResponse> {
    if (head.length < RESPONSE_HEAD_BYTES) return { handling: 'pass', message: null };
    const correlationId = head.readInt32BE(4);
    const request = this.inFlight.get(correlationId);
    if (!request) return { handling: 'pass', message: null };
    this.inFlight.delete(correlationId);
    const api = API_NAMES.get(request.apiKey) ?? null;
    const base = { kind: 'response' as const, correlationId, apiKey: request.apiKey, apiVersion: request.apiVersion, api, request: request.body };
    if (!api || !READ_RESPONSES.has(api)) return { handling: 'pass', message: { ...base, body: null } };
    return {
      handling: 'read',
      decode: (frame) => {
        try {
          // Response header v1 (tagged fields) with flexible versions.
          const at = request.apiVersion >= FIRST_FLEXIBLE[api] ? skipTaggedFields(frame, RESPONSE_HEAD_BYTES) : RESPONSE_HEAD_BYTES;
          return { ...base, body: readResponseBody(api, request.apiVersion, frame.subarray(at)) };
        } catch (err) {
          throw new WireProtocolError(`the relay cannot read this ${api} v${request.apiVersion} response (${(err as Error).message}): the connection is closed`);
        }
      },
    };
  }
}

/** The offset after a tagged-fields section starting at `at`. */
function skipTaggedFields(frame: DynamicBuffer, at: number): number {
  let [count, next] = readUnsignedVarInt(frame, at);
  for (; count > 0; count--) {
    [, next] = readUnsignedVarInt(frame, next); // tag
    const [size, after] = readUnsignedVarInt(frame, next);
    next = after + size;
  }
  if (next > frame.length) throw new RangeError('tagged fields run past the frame');
  return next;
}

function readUnsignedVarInt(frame: DynamicBuffer, at: number): [number, number] {
  let value = 0;
  for (let shift = 0; shift <= 28; shift += 7) {
    if (at >= frame.length) throw new RangeError('a varint runs past the frame');
    const byte = frame.get(at++);
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value >>> 0, at];
  }
  throw new RangeError('a varint longer than 5 bytes');
}
