/**
 * The relay's HTTP/1.1 decoders: messages cut at their heads, bodies passed through, every byte
 * kept in order whatever the chunk boundaries, smuggling and oversized heads rejected; and a real
 * node:http keep-alive exchange decoded through a TCP relay.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { segmentBuffers, WireProtocolError, type WireDecoder, type WireSegment } from '../../lab-server/runner/wire/contract.ts';
import {
  HttpRequestDecoder,
  HttpResponseDecoder,
  type HttpRequestMessage,
  type HttpResponseMessage,
} from '../../lab-server/runner/wire/http-wire.ts';

const bytes = (text: string) => Buffer.from(text, 'latin1');
const text = (segment: WireSegment<unknown>) => Buffer.concat(segmentBuffers(segment)).toString('latin1');

/** Pushes the chunks in order; returns the segments, the decoded messages and all segment bytes joined. */
function decode<M>(decoder: WireDecoder<M>, chunks: Buffer[]) {
  const segments = chunks.flatMap((chunk) => decoder.push(chunk));
  return {
    segments,
    messages: segments.flatMap((segment) => (segment.message ? [segment.message] : [])),
    joined: Buffer.concat(segments.flatMap(segmentBuffers)).toString('latin1'),
  };
}

const oneByteAtATime = (input: string) => [...bytes(input)].map((byte) => Buffer.from([byte]));

function responseDecoder(...methods: string[]): HttpResponseDecoder {
  const decoder = new HttpResponseDecoder();
  for (const method of methods) decoder.requestSent(method);
  return decoder;
}

const request = (method: string, target: string): HttpRequestMessage => ({ kind: 'request', method, target, version: 'HTTP/1.1' });
const response = (status: number, reason: string): HttpResponseMessage => ({ kind: 'response', status, reason });

const GET = 'GET /orders?id=7 HTTP/1.1\r\nHost: lab\r\n\r\n';
const POST = 'POST /orders HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\ncontent-length: 13\r\n\r\n';
const POST_BODY = '{"amount":42}';
const CHUNKED_POST_HEAD = 'POST /upload HTTP/1.1\r\nHost: lab\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n';
const CHUNKED_BODY = '5;name=value;q="a \\"b\\""\r\nhello\r\n6 ; ext\r\n world\r\n00\r\nX-Checksum: abc\r\nX-Other:  1 \r\n\r\n';

describe('HttpRequestDecoder', () => {
  it('cuts a GET at its head and a POST into head and Content-Length body', () => {
    const get = decode(new HttpRequestDecoder(), [bytes(GET)]);
    expect(get.segments).toEqual([{ bytes: bytes(GET), message: request('GET', '/orders?id=7') }]);

    const post = decode(new HttpRequestDecoder(), [bytes(POST + POST_BODY)]);
    expect(post.segments.map(text)).toEqual([POST, POST_BODY]);
    expect(post.segments.map((segment) => segment.message)).toEqual([request('POST', '/orders'), null]);
  });

  it('passes body bytes through as they arrive, then reads the next request on the same connection', () => {
    const decoder = new HttpRequestDecoder();
    expect(decoder.push(bytes(POST + '{"amo'))).toEqual([
      { bytes: bytes(POST), message: request('POST', '/orders') },
      { bytes: bytes('{"amo'), message: null },
    ]);
    expect(decoder.push(bytes('unt":42}')).map(text)).toEqual(['unt":42}']);
    expect(decoder.push(bytes(GET.slice(0, 10)))).toEqual([]); // an unfinished head is held
    expect(decoder.push(bytes(GET.slice(10)))).toEqual([{ bytes: bytes(GET), message: request('GET', '/orders?id=7') }]);
  });

  it('gives each of two pipelined requests in one chunk its own head segment', () => {
    const { segments } = decode(new HttpRequestDecoder(), [bytes(POST + POST_BODY + GET)]);
    expect(segments.map(text)).toEqual([POST, POST_BODY, GET]);
    expect(segments.map((segment) => segment.message)).toEqual([request('POST', '/orders'), null, request('GET', '/orders?id=7')]);
  });

  it('finds the end of a chunked body through chunk extensions and trailers', () => {
    const { segments } = decode(new HttpRequestDecoder(), [bytes(CHUNKED_POST_HEAD + CHUNKED_BODY + GET)]);
    expect(segments.map(text)).toEqual([CHUNKED_POST_HEAD, CHUNKED_BODY, GET]);
    expect(segments[0].message).toEqual(request('POST', '/upload'));
  });

  it('accepts repeated identical Content-Length values', () => {
    const head = 'PUT /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3, 3\r\n\r\n';
    expect(decode(new HttpRequestDecoder(), [bytes(head + 'abc' + GET)]).segments.map(text)).toEqual([head, 'abc', GET]);
  });

  it('rejects request smuggling: Content-Length with Transfer-Encoding, differing Content-Length values', () => {
    const both = 'POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n';
    expect(() => new HttpRequestDecoder().push(bytes(both))).toThrow(/both Content-Length and Transfer-Encoding/);
    const twoLines = 'POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n';
    expect(() => new HttpRequestDecoder().push(bytes(twoLines))).toThrow(/differing Content-Length/);
    const oneList = 'POST / HTTP/1.1\r\nContent-Length: 5, 50\r\n\r\n';
    expect(() => new HttpRequestDecoder().push(bytes(oneList))).toThrow(WireProtocolError);
    const chunkedNotLast = 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n';
    expect(() => new HttpRequestDecoder().push(bytes(chunkedNotLast))).toThrow(WireProtocolError);
  });

  it.each([
    ['a bare LF line ending', 'GET / HTTP/1.1\nHost: lab\r\n\r\n'],
    ['a bare LF empty line', 'GET / HTTP/1.1\r\nHost: lab\n\n'],
    ['obs-fold', 'GET / HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n'],
    ['a space before the colon', 'GET / HTTP/1.1\r\nHost : lab\r\n\r\n'],
    ['a malformed request line', 'GET  / HTTP/1.1\r\n\r\n'],
    ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
    ['a malformed Content-Length', 'POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n'],
    ['a malformed chunk size', `${CHUNKED_POST_HEAD}5x\r\nhello\r\n0\r\n\r\n`],
    ['chunk data not followed by CRLF', `${CHUNKED_POST_HEAD}5\r\nhello!\r\n0\r\n\r\n`],
  ])('rejects %s', (_, input) => {
    expect(() => decode(new HttpRequestDecoder(), [bytes(input)])).toThrow(WireProtocolError);
  });

  it('rejects an oversized head with a message naming the limit, before its end arrives', () => {
    const small = new HttpRequestDecoder({ maxHeadBytes: 1024 });
    expect(() => small.push(bytes(`GET / HTTP/1.1\r\nX-Big: ${'a'.repeat(2000)}`))).toThrow(
      'HTTP head over the 1024-byte limit (maxHeadBytes)',
    );
    const byDefault = new HttpRequestDecoder();
    expect(() => {
      byDefault.push(bytes('GET / HTTP/1.1\r\n'));
      for (let i = 0; i < 100; i++) byDefault.push(bytes(`X-Field-${i}: ${'b'.repeat(1000)}\r\n`));
    }).toThrow(/^HTTP head over the 65536-byte limit \(maxHeadBytes\)$/);
  });

  it('makes control characters in the target printable and bounds it', () => {
    const [control] = decode(new HttpRequestDecoder(), [bytes('GET /a\x01b\x1b[2J\x7f HTTP/1.1\r\n\r\n')]).messages;
    expect(control.target).toBe('/a?b?[2J?');
    const [long] = decode(new HttpRequestDecoder(), [bytes(`GET /${'x'.repeat(1000)} HTTP/1.1\r\n\r\n`)]).messages;
    expect(long.target).toHaveLength(300);
  });

  it('passes an empty line before a request line through unread', () => {
    const { segments } = decode(new HttpRequestDecoder(), oneByteAtATime(`\r\n${GET}`));
    expect(segments.map((segment) => segment.message)).toEqual([null, request('GET', '/orders?id=7')]);
  });

  it('passes everything after a CONNECT or Upgrade head through unread', () => {
    const connect = 'CONNECT lab:443 HTTP/1.1\r\nHost: lab:443\r\n\r\n';
    const afterConnect = decode(new HttpRequestDecoder(), [bytes(connect + GET + GET)]);
    expect(afterConnect.messages).toEqual([request('CONNECT', 'lab:443')]);
    expect(afterConnect.joined).toBe(connect + GET + GET);

    const upgrade = 'GET /chat HTTP/1.1\r\nHost: lab\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
    const afterUpgrade = decode(new HttpRequestDecoder(), [bytes(upgrade + '\x81\x05hello'), bytes(GET)]);
    expect(afterUpgrade.messages).toEqual([request('GET', '/chat')]);
    expect(afterUpgrade.joined).toBe(`${upgrade}\x81\x05hello${GET}`);
  });
});

describe('HttpResponseDecoder', () => {
  const OK_5 = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n';
  const CHUNKED_HEAD = 'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n';

  it('cuts responses by Content-Length and by chunked encoding with extensions and trailers', () => {
    const { segments } = decode(responseDecoder('GET', 'POST', 'GET'), [bytes(OK_5 + 'hello' + CHUNKED_HEAD + CHUNKED_BODY + OK_5 + 'world')]);
    expect(segments.map(text)).toEqual([OK_5, 'hello', CHUNKED_HEAD, CHUNKED_BODY, OK_5, 'world']);
    expect(segments.map((segment) => segment.message)).toEqual([response(200, 'OK'), null, response(201, 'Created'), null, response(200, 'OK'), null]);
  });

  it('reads no body after a HEAD response, even with a Content-Length', () => {
    const { segments } = decode(responseDecoder('HEAD', 'GET'), [bytes(OK_5 + OK_5 + 'hello')]);
    expect(segments.map(text)).toEqual([OK_5, OK_5, 'hello']);
  });

  it('reads no body after 204 and 304', () => {
    const noContent = 'HTTP/1.1 204 No Content\r\n\r\n';
    const notModified = 'HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\n\r\n';
    const { segments } = decode(responseDecoder('DELETE', 'GET', 'GET'), [bytes(noContent + notModified + OK_5 + 'hello')]);
    expect(segments.map(text)).toEqual([noContent, notModified, OK_5, 'hello']);
    expect(segments.map((segment) => segment.message?.status ?? null)).toEqual([204, 304, 200, null]);
  });

  it('takes 100 Continue as interim: the 200 after it still answers the same request', () => {
    const proceed = 'HTTP/1.1 100 Continue\r\n\r\n';
    // The second request is a HEAD: had the 100 used up the POST, the 200 would be read as the HEAD's.
    const { segments } = decode(responseDecoder('POST', 'HEAD'), [bytes(proceed + OK_5 + 'hello' + OK_5)]);
    expect(segments.map(text)).toEqual([proceed, OK_5, 'hello', OK_5]);
    expect(segments.map((segment) => segment.message)).toEqual([response(100, 'Continue'), response(200, 'OK'), null, response(200, 'OK')]);
  });

  it('passes a body without a length through to the close, unread', () => {
    const untilClose = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n';
    const rest = `streaming...${OK_5}hello`;
    const { messages, joined } = decode(responseDecoder('GET', 'GET'), [bytes(untilClose + rest), bytes('more')]);
    expect(messages).toEqual([response(200, 'OK')]);
    expect(joined).toBe(`${untilClose + rest}more`);
  });

  it('passes everything after 101 Switching Protocols or a 2xx to CONNECT through unread', () => {
    const switching = 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n';
    expect(decode(responseDecoder('GET', 'GET'), [bytes(switching + OK_5)]).messages).toEqual([response(101, 'Switching Protocols')]);
    const established = 'HTTP/1.1 200 Connection Established\r\n\r\n';
    expect(decode(responseDecoder('CONNECT'), [bytes(established + OK_5)]).messages).toEqual([response(200, 'Connection Established')]);
  });

  it('passes through after a response to no known request (e.g. an unprompted 408)', () => {
    const timeout = 'HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';
    const { messages, joined } = decode(new HttpResponseDecoder(), [bytes(timeout + OK_5)]);
    expect(messages).toEqual([response(408, 'Request Timeout')]);
    expect(joined).toBe(timeout + OK_5);
  });

  it('rejects Content-Length with Transfer-Encoding and a malformed status line', () => {
    const both = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n';
    expect(() => responseDecoder('GET').push(bytes(both))).toThrow(/both Content-Length and Transfer-Encoding/);
    expect(() => responseDecoder('GET').push(bytes('HTTP/1.1 2000 OK\r\n\r\n'))).toThrow(/malformed HTTP status line/);
  });
});

describe('every byte boundary', () => {
  const requests = [GET, POST + POST_BODY, CHUNKED_POST_HEAD + CHUNKED_BODY, 'HEAD /orders HTTP/1.1\r\nHost: lab\r\n\r\n', GET].join('');
  const methods = ['GET', 'POST', 'POST', 'HEAD', 'GET'];
  const responses = [
    'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]',
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 13\r\n\r\n{"amount":42}',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=1\r\ndone\r\n0\r\nX-T: 1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n',
    'HTTP/1.1 200 OK\r\n\r\nuntil the close',
  ].join('');

  const cases = [
    ['requests', requests, () => new HttpRequestDecoder()],
    ['responses', responses, () => responseDecoder(...methods)],
  ] as const;

  it.each(cases)('gives the same messages and bytes for %s pushed one byte at a time or split anywhere', (_, input, makeDecoder) => {
    const whole = decode<HttpRequestMessage | HttpResponseMessage>(makeDecoder(), [bytes(input)]);
    expect(whole.joined).toBe(input);
    expect(whole.messages).toHaveLength(input === requests ? 5 : 6);
    const heads = whole.segments.filter((segment) => segment.message).map(text);

    const bytewise = decode<HttpRequestMessage | HttpResponseMessage>(makeDecoder(), oneByteAtATime(input));
    expect(bytewise.joined).toBe(input);
    expect(bytewise.messages).toEqual(whole.messages);
    expect(bytewise.segments.filter((segment) => segment.message).map(text)).toEqual(heads); // each head still one segment

    for (let at = 1; at < input.length; at++) {
      const split = decode<HttpRequestMessage | HttpResponseMessage>(makeDecoder(), [bytes(input.slice(0, at)), bytes(input.slice(at))]);
      expect(split.joined).toBe(input);
      expect(split.messages).toEqual(whole.messages);
    }
  });
});

describe('a real node:http exchange through a relay', () => {
  it('decodes the requests the client sent and the responses it received, on one keep-alive connection', async () => {
    const server = http.createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (part: Buffer) => parts.push(part));
      req.on('end', () => {
        if (req.url === '/stream') {
          res.write('part one, '); // no length: chunked
          res.end('part two');
        } else if (req.method === 'POST') {
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ received: JSON.parse(Buffer.concat(parts).toString()) }));
        } else res.end('not sent for HEAD');
      });
    });
    const decodedRequests: HttpRequestMessage[] = [];
    const decodedResponses: HttpResponseMessage[] = [];
    const raw = { up: [] as Buffer[], upSegments: [] as Buffer[], down: [] as Buffer[], downSegments: [] as Buffer[] };
    let connections = 0;
    const relay = net.createServer((client) => {
      connections++;
      const upstream = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
      const requestDecoder = new HttpRequestDecoder();
      const responseDecoder = new HttpResponseDecoder();
      client.on('data', (chunk: Buffer) => {
        raw.up.push(Buffer.from(chunk));
        for (const segment of requestDecoder.push(chunk)) {
          if (segment.message) {
            decodedRequests.push(segment.message);
            responseDecoder.requestSent(segment.message.method);
          }
          raw.upSegments.push(segment.bytes);
          upstream.write(segment.bytes);
        }
      });
      upstream.on('data', (chunk: Buffer) => {
        raw.down.push(Buffer.from(chunk));
        for (const segment of responseDecoder.push(chunk)) {
          if (segment.message) decodedResponses.push(segment.message);
          raw.downSegments.push(segment.bytes);
          client.write(segment.bytes);
        }
      });
      client.on('end', () => upstream.end());
      upstream.on('end', () => client.end());
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

    const send = (method: string, path: string, body?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
        const req = http.request({ host: '127.0.0.1', port: (relay.address() as AddressInfo).port, method, path, agent, headers }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (part: Buffer) => parts.push(part));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
        });
        req.on('error', reject);
        req.end(body);
      });

    try {
      const stream = await send('GET', '/stream');
      const created = await send('POST', '/items', JSON.stringify({ id: 7, name: 'widget' }));
      const head = await send('HEAD', '/items');

      expect(stream).toEqual({ status: 200, body: 'part one, part two' });
      expect(created.status).toBe(201);
      expect(JSON.parse(created.body)).toEqual({ received: { id: 7, name: 'widget' } });
      expect(head).toEqual({ status: 200, body: '' });
      expect(decodedRequests).toEqual([request('GET', '/stream'), request('POST', '/items'), request('HEAD', '/items')]);
      expect(decodedResponses).toEqual([response(200, 'OK'), response(201, 'Created'), response(200, 'OK')]);
      expect(connections).toBe(1);
      expect(Buffer.concat(raw.upSegments).equals(Buffer.concat(raw.up))).toBe(true);
      expect(Buffer.concat(raw.downSegments).equals(Buffer.concat(raw.down))).toBe(true);
    } finally {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => relay.close(resolve));
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
