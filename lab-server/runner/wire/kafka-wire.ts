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

/** Cuts one direction into whole size-prefixed frames, keeping a partial frame until its rest arrives. */
class FrameSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly what: string,
  ) {}

  push(chunk: Buffer): Buffer[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const frames: Buffer[] = [];
    while (this.pendingBytes >= 4) {
      const head = this.pending[0]!.length >= 4 ? this.pending[0]! : Buffer.concat(this.pending);
      const size = head.readInt32BE(0);
      if (size < 0 || size > this.maxBytes) {
        throw new WireProtocolError(`Kafka ${this.what} of ${size} bytes is over the relay's limit of ${Math.round(this.maxBytes / 1024 / 1024)} MiB`);
      }
      if (this.pendingBytes < 4 + size) break;
      const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
      frames.push(all.subarray(0, 4 + size));
      const rest = all.subarray(4 + size);
      this.pending = rest.length ? [rest] : [];
      this.pendingBytes = rest.length;
    }
    return frames;
  }
}

/** Both directions of one Kafka connection. */
export class KafkaConnectionDecoder {
  private readonly inFlight = new Map<number, { apiKey: number; apiVersion: number; body: KafkaRequestBody | null }>();
  readonly requests: WireDecoder<KafkaRequest>;
  readonly responses: WireDecoder<KafkaResponse>;

  constructor(limits: KafkaDecoderLimits = DEFAULT_KAFKA_LIMITS) {
    const requestFrames = new FrameSplitter(limits.maxRequestBytes, 'request');
    const responseFrames = new FrameSplitter(limits.maxResponseBytes, 'response');
    this.requests = { push: (chunk) => requestFrames.push(chunk).map((frame) => this.request(frame)) };
    this.responses = { push: (chunk) => responseFrames.push(chunk).map((frame) => this.response(frame)) };
  }

  private request(frame: Buffer): WireSegment<KafkaRequest> {
    // The header: api key, api version, correlation id, client id (a classic nullable string in
    // every header version), then tagged fields in header v2 (flexible versions).
    if (frame.length < 4 + 10) return { bytes: frame, message: null }; // a SASL token of the original handshake, say
    const apiKey = frame.readInt16BE(4);
    const apiVersion = frame.readInt16BE(6);
    const correlationId = frame.readInt32BE(8);
    const clientIdLength = frame.readInt16BE(12);
    const api = API_NAMES.get(apiKey) ?? null;
    if (!api || apiVersion < 0 || clientIdLength < -1 || 14 + Math.max(0, clientIdLength) > frame.length) return { bytes: frame, message: null };
    const clientId = clientIdLength < 0 ? null : printable(frame.toString('utf8', 14, 14 + clientIdLength));
    let body: KafkaRequestBody | null = null;
    if (READ_REQUESTS.has(api)) {
      let at = 14 + Math.max(0, clientIdLength);
      try {
        if (apiVersion >= FIRST_FLEXIBLE[api]) at = skipTaggedFields(frame, at);
        body = readRequestBody(api, apiVersion, frame.subarray(at));
      } catch (err) {
        throw new WireProtocolError(`the relay cannot read this ${api} v${apiVersion} request (${(err as Error).message}): the connection is closed`);
      }
    }
    // Produce with acks=0 gets no answer: nothing to pair.
    const answered = !(body?.api === 'Produce' && body.acks === 0);
    if (answered && this.inFlight.size < MAX_IN_FLIGHT) this.inFlight.set(correlationId, { apiKey, apiVersion, body });
    return { bytes: frame, message: { kind: 'request', apiKey, apiVersion, correlationId, clientId, api, body } };
  }

  private response(frame: Buffer): WireSegment<KafkaResponse> {
    if (frame.length < 8) return { bytes: frame, message: null };
    const correlationId = frame.readInt32BE(4);
    const request = this.inFlight.get(correlationId);
    if (!request) return { bytes: frame, message: null };
    this.inFlight.delete(correlationId);
    const api = API_NAMES.get(request.apiKey) ?? null;
    let body: KafkaResponseBody | null = null;
    if (api && READ_RESPONSES.has(api)) {
      try {
        // Response header v1 (tagged fields) with flexible versions, except ApiVersions (never).
        const at = request.apiVersion >= FIRST_FLEXIBLE[api] ? skipTaggedFields(frame, 8) : 8;
        body = readResponseBody(api, request.apiVersion, frame.subarray(at));
      } catch (err) {
        throw new WireProtocolError(`the relay cannot read this ${api} v${request.apiVersion} response (${(err as Error).message}): the connection is closed`);
      }
    }
    return { bytes: frame, message: { kind: 'response', correlationId, apiKey: request.apiKey, apiVersion: request.apiVersion, api, body, request: request.body } };
  }
}

/** The offset after a tagged-fields section starting at `at`. */
function skipTaggedFields(frame: Buffer, at: number): number {
  let [count, next] = readUnsignedVarInt(frame, at);
  for (; count > 0; count--) {
    [, next] = readUnsignedVarInt(frame, next); // tag
    const [size, after] = readUnsignedVarInt(frame, next);
    next = after + size;
  }
  if (next > frame.length) throw new RangeError('tagged fields run past the frame');
  return next;
}

function readUnsignedVarInt(frame: Buffer, at: number): [number, number] {
  let value = 0;
  for (let shift = 0; shift <= 28; shift += 7) {
    if (at >= frame.length) throw new RangeError('a varint runs past the frame');
    const byte = frame[at++]!;
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value >>> 0, at];
  }
  throw new RangeError('a varint longer than 5 bytes');
}
