/**
 * The relay's PostgreSQL decoders: whole messages out of any cut of the bytes, never a byte
 * changed, and what exactly-once depends on named (BEGIN, writes, COMMIT, ROLLBACK, the server's
 * answers). Frames are built by hand here, as the protocol chapter of PostgreSQL's docs lays them out.
 */
import { describe, expect, it } from 'vitest';
import { printable, segmentBuffers, WireProtocolError, type WireDecoder, type WireSegment } from '../../lab-server/runner/wire/contract.ts';
import { classifySql, PostgresBackendDecoder, PostgresFrontendDecoder } from '../../lab-server/runner/wire/postgres-wire.ts';

const cstring = (text: string) => Buffer.concat([Buffer.from(text, 'utf8'), Buffer.from([0])]);

/** A typed message: type byte, int32 length counting itself, body. */
function message(type: string, ...body: Buffer[]): Buffer {
  const content = Buffer.concat(body);
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(4 + content.length, 1);
  return Buffer.concat([head, content]);
}

function int32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(value);
  return bytes;
}

function int16(value: number): Buffer {
  const bytes = Buffer.alloc(2);
  bytes.writeInt16BE(value);
  return bytes;
}

/** An untyped first message: int32 length counting itself, int32 code, rest. */
function untyped(code: number, rest = Buffer.alloc(0)): Buffer {
  return Buffer.concat([int32(8 + rest.length), int32(code), rest]);
}

const startup = untyped(196608, Buffer.concat([cstring('user'), cstring('learner'), cstring('database'), cstring('lab'), Buffer.from([0])]));
const sslRequest = untyped(80877103);
const query = (sql: string) => message('Q', cstring(sql));
const parse = (name: string, sql: string) => message('P', cstring(name), cstring(sql), int16(0));
const bind = (portal: string, statement: string) => message('B', cstring(portal), cstring(statement), int16(0), int16(0), int16(0));
const execute = (portal: string) => message('E', cstring(portal), int32(0));
const sync = message('S');
const commandComplete = (tag: string) => message('C', cstring(tag));
const ready = (status: string) => message('Z', Buffer.from(status, 'latin1'));
const errorResponse = (code: string, text: string) =>
  message('E', Buffer.from('S'), cstring('ERROR'), Buffer.from('C'), cstring(code), Buffer.from('M'), cstring(text), Buffer.from([0]));

/** Pushes every chunk; checks that the segments' bytes are the pushed bytes, in order, each a whole message. */
function decode<Message>(decoder: WireDecoder<Message>, ...chunks: Buffer[]): WireSegment<Message>[] {
  const segments = chunks.flatMap((chunk) => decoder.push(chunk));
  expect(Buffer.concat(segments.flatMap(segmentBuffers)).equals(Buffer.concat(chunks))).toBe(true);
  return segments;
}

const messages = <Message>(segments: WireSegment<Message>[]) => segments.map((segment) => segment.message);

function bytewise(stream: Buffer): Buffer[] {
  return [...stream].map((value) => Buffer.from([value]));
}

function thrown(act: () => unknown): WireProtocolError {
  try {
    act();
  } catch (err) {
    expect(err).toBeInstanceOf(WireProtocolError);
    const error = err as WireProtocolError;
    expect(error.message).not.toMatch(/[\n\r]/);
    return error;
  }
  throw new Error('expected a WireProtocolError');
}

describe('PostgresFrontendDecoder', () => {
  it('reads the startup, then a simple query of several statements, classified in order', () => {
    const sql = "BEGIN; INSERT INTO orders VALUES (1, 'a;b'); COMMIT;";
    const segments = decode(new PostgresFrontendDecoder(), startup, query(sql), message('X'));
    expect(messages(segments)).toEqual([
      { kind: 'startup' },
      { kind: 'query', sql, statement: 'begin', statements: ['begin', 'write', 'commit'] },
      { kind: 'terminate' },
    ]);
    expect(segments.map((segment) => segment.bytes.length)).toEqual([startup.length, query(sql).length, 5]);
  });

  it('names the SQL an Execute runs through named and unnamed statements and portals', () => {
    const decoder = new PostgresFrontendDecoder();
    const stream = [
      startup,
      parse('insert-order', 'INSERT INTO orders (id) VALUES ($1) ON CONFLICT (id) DO NOTHING'),
      parse('', 'SELECT * FROM orders'),
      bind('', 'insert-order'),
      execute(''),
      bind('p1', ''),
      execute('p1'),
      parse('', 'commit'),
      bind('', ''),
      execute(''),
      execute('p1'),
      execute('never-bound'),
      sync,
    ];
    const found = messages(decode(decoder, Buffer.concat(stream)));
    expect(found.slice(1, 4)).toEqual([
      { kind: 'parse', name: 'insert-order', sql: 'INSERT INTO orders (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', statement: 'write' },
      { kind: 'parse', name: '', sql: 'SELECT * FROM orders', statement: 'other' },
      { kind: 'bind', portal: '', statementName: 'insert-order' },
    ]);
    expect(found.filter((found) => found?.kind === 'execute')).toEqual([
      { kind: 'execute', portal: '', sql: 'INSERT INTO orders (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', statement: 'write' },
      { kind: 'execute', portal: 'p1', sql: 'SELECT * FROM orders', statement: 'other' },
      { kind: 'execute', portal: '', sql: 'commit', statement: 'commit' },
      // p1 was bound to the unnamed statement before it was parsed again: it still runs the SELECT.
      { kind: 'execute', portal: 'p1', sql: 'SELECT * FROM orders', statement: 'other' },
      { kind: 'execute', portal: 'never-bound', sql: null, statement: 'other' },
    ]);
    expect(found.at(-1)).toEqual({ kind: 'sync' });
  });

  it('forgets a closed statement, and passes Describe, Close, Flush and password messages as other', () => {
    const close = message('C', Buffer.from('S'), cstring('s1'));
    const stream = [startup, message('p', cstring('secret')), parse('s1', 'DELETE FROM t'), close, message('D', Buffer.from('S'), cstring('s1')), message('H'), bind('', 's1'), execute('')];
    expect(messages(decode(new PostgresFrontendDecoder(), ...stream)).slice(1)).toEqual([
      { kind: 'other', type: 'p' },
      { kind: 'parse', name: 's1', sql: 'DELETE FROM t', statement: 'write' },
      { kind: 'other', type: 'C' },
      { kind: 'other', type: 'D' },
      { kind: 'other', type: 'H' },
      { kind: 'bind', portal: '', statementName: 's1' },
      { kind: 'execute', portal: '', sql: null, statement: 'other' },
    ]);
  });

  it('gives the same messages and bytes whatever the cuts: one byte at a time, and several messages in one chunk', () => {
    const stream = Buffer.concat([startup, query('BEGIN'), parse('s', 'UPDATE t SET x = 1'), bind('', 's'), execute(''), sync, query('COMMIT'), message('X')]);
    const whole = messages(decode(new PostgresFrontendDecoder(), stream));
    expect(whole).toHaveLength(8);
    expect(messages(decode(new PostgresFrontendDecoder(), ...bytewise(stream)))).toEqual(whole);
    for (let cut = 1; cut < stream.length; cut++) {
      const decoder = new PostgresFrontendDecoder();
      expect(messages(decode(decoder, stream.subarray(0, cut), stream.subarray(cut)))).toEqual(whole);
    }
  });

  it('keeps an incomplete message until its rest arrives', () => {
    const decoder = new PostgresFrontendDecoder();
    decoder.push(startup);
    const frame = query('INSERT INTO t VALUES (1)');
    expect(decoder.push(frame.subarray(0, 3))).toEqual([]);
    expect(decoder.push(frame.subarray(3, 10))).toEqual([]);
    const [segment] = decoder.push(frame.subarray(10));
    expect(segment!.bytes.equals(frame)).toBe(true);
    expect(segment!.message).toMatchObject({ kind: 'query', statement: 'write' });
  });

  it('continues with a startup after an SSLRequest answered N', () => {
    const frontend = new PostgresFrontendDecoder();
    const backend = new PostgresBackendDecoder();
    expect(messages(decode(frontend, sslRequest))).toEqual([{ kind: 'encryption-request', method: 'ssl' }]);
    backend.expectEncryptionAnswer();
    expect(messages(decode(backend, Buffer.concat([Buffer.from('N'), message('R', int32(0)), ready('I')])))).toEqual([
      { kind: 'encryption-answer', accepted: false },
      { kind: 'other', type: 'R' },
      { kind: 'ready', status: 'idle' },
    ]);
    expect(messages(decode(frontend, startup, query('BEGIN')))).toEqual([{ kind: 'startup' }, { kind: 'query', sql: 'BEGIN', statement: 'begin', statements: ['begin'] }]);
  });

  it('passes everything after an SSLRequest answered S through unread, in both directions', () => {
    const frontend = new PostgresFrontendDecoder();
    const backend = new PostgresBackendDecoder();
    decode(frontend, sslRequest);
    backend.expectEncryptionAnswer();
    const serverHello = Buffer.from([0x16, 0x03, 0x03, 0x00, 0x05, 1, 2, 3, 4, 5]);
    const answer = decode(backend, Buffer.concat([Buffer.from('S'), serverHello]));
    expect(answer.map((segment) => [segment.bytes.toString('hex'), segment.message])).toEqual([
      ['53', { kind: 'encryption-answer', accepted: true }],
      [serverHello.toString('hex'), null],
    ]);
    frontend.encrypted();
    const clientHello = Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff, 0x51]);
    expect(messages(decode(frontend, clientHello, query('COMMIT')))).toEqual([null, null]);
    expect(messages(decode(backend, commandComplete('COMMIT')))).toEqual([null]);
  });

  it('takes a GSSENCRequest and a CancelRequest as first messages', () => {
    expect(messages(decode(new PostgresFrontendDecoder(), untyped(80877104)))).toEqual([{ kind: 'encryption-request', method: 'gss' }]);
    const cancel = untyped(80877102, Buffer.concat([int32(4242), int32(99)]));
    expect(cancel).toHaveLength(16);
    expect(messages(decode(new PostgresFrontendDecoder(), cancel))).toEqual([{ kind: 'cancel' }]);
  });

  it('keeps control characters of the SQL as they were sent; printing goes through printable', () => {
    const sql = 'INSERT INTO t VALUES (1)\r\n-- done\u001b[2J';
    const [segment] = decode(new PostgresFrontendDecoder(), startup, query(sql)).slice(1);
    expect(Buffer.concat(segmentBuffers(segment!)).equals(query(sql))).toBe(true);
    expect(segment!.message).toMatchObject({ kind: 'query', sql, statement: 'write' });
    expect(printable((segment!.message as { sql: string }).sql)).toBe('INSERT INTO t VALUES (1)??-- done?[2J');
  });

  it('bounds the SQL it hands out to 2,000 characters, and still classifies past them', () => {
    const sql = `INSERT INTO t VALUES ${Array.from({ length: 3000 }, (_, i) => `('é${i}')`).join(', ')}; COMMIT`;
    const [, segment] = decode(new PostgresFrontendDecoder(), startup, query(sql));
    const found = segment!.message as { sql: string; statements: string[] };
    expect(found.sql).toBe(sql.slice(0, 2000));
    expect(found.statements).toEqual(['write', 'commit']);
  });

  it('refuses a message over its limit, and one whose length is shorter than itself', () => {
    const over = Buffer.concat([Buffer.from('Q'), int32(20_000_000)]);
    expect(thrown(() => new PostgresFrontendDecoder().push(Buffer.concat([startup, over]))).message).toBe(
      "PostgreSQL client message 'Q' of 20000001 bytes is over the relay's limit of 16 MiB",
    );
    const small = new PostgresFrontendDecoder({ maxMessageBytes: 100 });
    expect(thrown(() => small.push(Buffer.concat([startup, query('x'.repeat(100))]))).message).toBe(
      "PostgreSQL client message 'Q' of 106 bytes is over the relay's limit of 100 bytes",
    );
    const negative = Buffer.concat([Buffer.from('P'), int32(-1)]);
    expect(thrown(() => new PostgresFrontendDecoder().push(Buffer.concat([startup, negative]))).message).toBe(
      "PostgreSQL client message 'P' declares a length of -1, less than the 4 bytes of the length itself",
    );
    expect(thrown(() => new PostgresFrontendDecoder().push(int32(4))).message).toBe(
      'PostgreSQL startup packet declares a length of 4, less than the 8 bytes of its length and code',
    );
    expect(thrown(() => new PostgresFrontendDecoder().push(int32(0x16030100))).message).toMatch(/^PostgreSQL startup packet of 369295616 bytes is over/);
  });

  it('refuses a string without its NUL terminator and a Close too short to name anything, and stays refused', () => {
    const decoder = new PostgresFrontendDecoder();
    decoder.push(startup);
    const error = thrown(() => decoder.push(message('Q', Buffer.from('SELECT 1'))));
    expect(error.message).toBe("PostgreSQL message 'Q' has a string without its NUL terminator");
    expect(thrown(() => decoder.push(query('SELECT 1')))).toBe(error);
    for (const frame of [message('P', cstring('name')), message('B', cstring('')), message('E'), message('C'), message('C', Buffer.from('S'))]) {
      const fresh = new PostgresFrontendDecoder();
      fresh.push(startup);
      expect(thrown(() => fresh.push(frame)).message).toMatch(/has a string without its NUL terminator$/);
    }
  });
});

describe('PostgresBackendDecoder', () => {
  it('reads CommandComplete, ReadyForQuery and ErrorResponse', () => {
    const stream = [
      message('1'),
      commandComplete('BEGIN'),
      ready('T'),
      commandComplete('INSERT 0 3'),
      commandComplete('UPDATE 2'),
      errorResponse('23505', 'duplicate key value violates unique constraint "orders_pkey"\nDETAIL: x'),
      ready('E'),
      commandComplete('ROLLBACK'),
      commandComplete('COMMIT'),
      commandComplete('SELECT 5'),
      ready('I'),
    ];
    expect(messages(decode(new PostgresBackendDecoder(), ...stream))).toEqual([
      { kind: 'other', type: '1' },
      { kind: 'command-complete', tag: 'BEGIN', statement: 'begin', rows: null },
      { kind: 'ready', status: 'transaction' },
      { kind: 'command-complete', tag: 'INSERT 0 3', statement: 'write', rows: 3 },
      { kind: 'command-complete', tag: 'UPDATE 2', statement: 'write', rows: 2 },
      { kind: 'error', code: '23505', message: 'duplicate key value violates unique constraint "orders_pkey"?DETAIL: x' },
      { kind: 'ready', status: 'failed' },
      { kind: 'command-complete', tag: 'ROLLBACK', statement: 'rollback', rows: null },
      { kind: 'command-complete', tag: 'COMMIT', statement: 'commit', rows: null },
      { kind: 'command-complete', tag: 'SELECT 5', statement: 'other', rows: null },
      { kind: 'ready', status: 'idle' },
    ]);
  });

  it('counts a COPY as a write only when the server asked for the data (COPY ... FROM STDIN)', () => {
    const copyIn = message('G', Buffer.from([0]), int16(0));
    const copyOut = message('H', Buffer.from([0]), int16(0));
    expect(messages(decode(new PostgresBackendDecoder(), copyIn, commandComplete('COPY 4'), copyOut, message('d', Buffer.from('x\n')), message('c'), commandComplete('COPY 1')))).toEqual([
      { kind: 'other', type: 'G' },
      { kind: 'command-complete', tag: 'COPY 4', statement: 'write', rows: 4 },
      { kind: 'other', type: 'H' },
      { kind: 'other', type: 'd' },
      { kind: 'other', type: 'c' },
      { kind: 'command-complete', tag: 'COPY 1', statement: 'other', rows: 1 },
    ]);
  });

  it('gives the same messages and bytes one byte at a time', () => {
    const stream = Buffer.concat([commandComplete('INSERT 0 1'), errorResponse('40001', 'could not serialize'), ready('I')]);
    const whole = messages(decode(new PostgresBackendDecoder(), stream));
    expect(messages(decode(new PostgresBackendDecoder(), ...bytewise(stream)))).toEqual(whole);
  });

  it('decodes an ErrorResponse sent instead of an encryption answer as a message', () => {
    const backend = new PostgresBackendDecoder();
    backend.expectEncryptionAnswer();
    expect(messages(decode(backend, errorResponse('53200', 'out of memory')))).toEqual([{ kind: 'error', code: '53200', message: 'out of memory' }]);
  });

  it('refuses an oversized or malformed server message', () => {
    expect(thrown(() => new PostgresBackendDecoder().push(Buffer.concat([Buffer.from('D'), int32(64 * 1024 * 1024)]))).message).toBe(
      "PostgreSQL server message 'D' of 67108865 bytes is over the relay's limit of 64 MiB",
    );
    expect(thrown(() => new PostgresBackendDecoder({ maxMessageBytes: 1024 * 1024 * 1024 }).push(Buffer.concat([Buffer.from([0]), int32(3)]))).message).toBe(
      'PostgreSQL server message 0x00 declares a length of 3, less than the 4 bytes of the length itself',
    );
    expect(thrown(() => new PostgresBackendDecoder().push(message('Z'))).message).toBe('PostgreSQL ReadyForQuery has no known status (I, T or E)');
    expect(thrown(() => new PostgresBackendDecoder().push(ready('X'))).message).toBe('PostgreSQL ReadyForQuery has no known status (I, T or E)');
    expect(thrown(() => new PostgresBackendDecoder().push(message('E', Buffer.from('C'), cstring('23505')))).message).toBe(
      'PostgreSQL ErrorResponse ends without the zero byte after its fields',
    );
    expect(thrown(() => new PostgresBackendDecoder().push(message('C', Buffer.from('INSERT 0 1')))).message).toBe(
      "PostgreSQL message 'C' has a string without its NUL terminator",
    );
  });
});

describe('damaged streams', () => {
  it('end in a WireProtocolError or in whole messages, never in another error or a changed byte', () => {
    const frontend = Buffer.concat([startup, query('BEGIN; INSERT INTO t VALUES (1)'), parse('s', 'COMMIT'), bind('p', 's'), execute('p'), message('C', Buffer.from('P'), cstring('p')), sync]);
    const backend = Buffer.concat([commandComplete('INSERT 0 1'), errorResponse('23505', 'duplicate'), ready('T'), message('G', Buffer.from([0]), int16(0))]);
    let seed = 7;
    const random = (below: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % below);
    for (let round = 0; round < 2000; round++) {
      for (const [stream, decoder] of [
        [frontend, new PostgresFrontendDecoder()],
        [backend, new PostgresBackendDecoder()],
      ] as const) {
        const damaged = Buffer.from(stream);
        for (let flips = 1 + random(3); flips > 0; flips--) damaged[random(damaged.length)] = random(4) === 0 ? 0 : random(256);
        const pushed = damaged.subarray(0, 1 + random(damaged.length));
        try {
          const segments = decoder.push(pushed);
          const out = Buffer.concat(segments.flatMap(segmentBuffers));
          expect(out.equals(pushed.subarray(0, out.length))).toBe(true);
        } catch (err) {
          expect(err).toBeInstanceOf(WireProtocolError);
        }
      }
    }
  });
});

describe('classifySql', () => {
  it.each([
    ['BEGIN', ['begin']],
    ['start transaction isolation level serializable', ['begin']],
    ['begin work; commit work', ['begin', 'commit']],
    ['END', ['commit']],
    ['COMMIT AND CHAIN', ['commit']],
    ["COMMIT PREPARED 'tx1'", ['other']],
    ['ROLLBACK', ['rollback']],
    ['abort', ['rollback']],
    ['ROLLBACK TO SAVEPOINT s1', ['other']],
    ['rollback work to s1', ['other']],
    ["ROLLBACK PREPARED 'tx1'", ['other']],
    ['insert into t values (1) on conflict (id) do update set n = excluded.n', ['write']],
    ['UPDATE t SET n = 1', ['write']],
    ['DELETE FROM t', ['write']],
    ['MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE', ['write']],
    ['COPY orders (id, total) FROM STDIN', ['write']],
    ['COPY (SELECT * FROM orders) TO STDOUT', ['other']],
    ['copy "from" to stdout', ['other']],
    ['WITH moved AS (DELETE FROM outbox RETURNING *) SELECT * FROM moved', ['write']],
    ['WITH src AS (SELECT 1 AS id) INSERT INTO t SELECT id FROM src', ['write']],
    ['WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT * FROM n', ['other']],
    ['WITH locked AS (SELECT * FROM t FOR UPDATE) SELECT * FROM locked', ['other']],
    ['  -- a comment; COMMIT\n  /* a /* nested */ comment; ROLLBACK */ INSERT INTO t VALUES (1)', ['write']],
    ["SELECT 'BEGIN; COMMIT'; SELECT E'it\\'s; ROLLBACK'; SELECT \"a;b\" FROM t", ['other', 'other', 'other']],
    ['SELECT $$; COMMIT $$, $tag$ $$; ROLLBACK $tag$, $1', ['other']],
    [';; ;', []],
    ['', []],
    ['SELECT 1', ['other']],
    ['INSERTED', ['other']],
    ['CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN true THEN 1 END; INSERT INTO t VALUES (1); END; COMMIT', ['other', 'commit']],
    ['CREATE TABLE t (id int); BEGIN', ['other', 'begin']],
  ] as const)('%s', (sql, kinds) => {
    expect(classifySql(sql)).toEqual(kinds);
  });
});
