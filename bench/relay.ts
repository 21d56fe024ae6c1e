/**
 * npm run bench:relay [-- --seconds S --rounds R --in-flight N --records M --value-bytes B --fetch-bytes F]
 * What decoding costs the sandbox's relay (lab-server/runner/program/sandbox/relay.ts) on Kafka
 * traffic, without a broker: a fake Kafka server answers every request frame with a response
 * frame of the same correlation id, and a client keeps N requests in flight through the relay's
 * Unix socket, S seconds per variant after a 1 s warm-up. Two workloads: transactional Produce v11
 * requests of M records of B bytes each (request bodies the tap reads: record batch headers), and
 * header-only Fetch v11 requests answered with F bytes (big answers that pass unread, framed only).
 * Variants, alternated R times: the relay copying bytes (plain), the relay with a WireTap
 * (decoding), and the client straight to the server's TCP port (direct, once per round). The
 * relay runs in this process, the server and the client in a child, so the relay's CPU time per
 * request is this process's own. Prints median MB/s (frame bytes both ways) and requests/s per
 * workload and variant, and decoding's overhead vs plain. Prints figures; asserts nothing.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Writer, produceV11 } from '@platformatic/kafka';
import { HostRelay, planRelay } from '../lab-server/runner/program/sandbox/relay.ts';
import { WireTap } from '../lab-server/runner/wire/wire-tap.ts';
import { median } from './median.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    'in-flight': { type: 'string', default: '5' },
    records: { type: 'string', default: '100' },
    'value-bytes': { type: 'string', default: '1000' },
    'fetch-bytes': { type: 'string', default: String(1024 * 1024) },
    peer: { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const inFlight = Number(values['in-flight']);
const records = Number(values.records);
const valueBytes = Number(values['value-bytes']);
const fetchBytes = Number(values['fetch-bytes']);
const WARM_UP_MS = 1000;

type WorkloadName = 'produce' | 'fetch';
type Job = { workload: WorkloadName; target: string | number };
type PeerMessage = { t: 'port'; port: number } | { t: 'window' } | { t: 'result'; requests: number; bytes: number; ms: number } | { t: 'error'; message: string };

/** A request header up to the correlation id (v1: classic client id), then `body`; framed. */
function requestFrame(apiKey: number, apiVersion: number, flexible: boolean, body: Writer | null): Buffer {
  const frame = Writer.create().appendInt16(apiKey).appendInt16(apiVersion).appendInt32(0).appendString('bench', false);
  if (flexible) frame.appendTaggedFields();
  if (body) frame.appendFrom(body);
  return frame.prependLength().buffer;
}

/** The frames of each workload: a request (its correlation id at bytes 8..12) and the answer's payload after the correlation id. */
function workloads(): Record<WorkloadName, { request: Buffer; answer: Buffer }> {
  const messages = Array.from({ length: records }, (_, i) => ({ topic: 'bench-out', partition: 0, key: Buffer.from(`key-${i}`), value: randomBytes(valueBytes) }));
  const produce = produceV11.createRequest(-1, 30000, messages, { transactionalId: 'bench-tx', producerId: 4001n, producerEpoch: 0 } as never);
  // Produce v11 response: header v1 (tagged fields), one topic, one partition, no errors.
  const produced = Writer.create()
    .appendTaggedFields()
    .appendArray(['bench-out'], (w, topic) =>
      w.appendString(topic).appendArray([0], (p, index) => p.appendInt32(index).appendInt16(0).appendInt64(42n).appendInt64(-1n).appendInt64(0n).appendArray([], () => {}).appendString(null)),
    )
    .appendInt32(0)
    .appendTaggedFields();
  return {
    produce: { request: requestFrame(0, 11, true, produce), answer: produced.buffer },
    // Fetch v11 (api key 1, not flexible): the header alone; the relay frames the answer and reads none of it.
    fetch: { request: requestFrame(1, 11, false, null), answer: Buffer.alloc(fetchBytes, 0x61) },
  };
}

/** Cuts a stream into frames without copying them: calls `onFrame` with each frame's first 12 bytes and its size. */
function frameReader(onFrame: (head: Buffer, bytes: number) => void): (chunk: Buffer) => void {
  const head = Buffer.alloc(12);
  let have = 0;
  let left = 0;
  let total = 0;
  return (chunk) => {
    for (let at = 0; at < chunk.length; ) {
      if (have < 12) {
        const n = Math.min(12 - have, chunk.length - at);
        chunk.copy(head, have, at, at + n);
        have += n;
        at += n;
        if (have < 12) return;
        total = 4 + head.readInt32BE(0);
        left = total - 12;
      }
      const n = Math.min(left, chunk.length - at);
      left -= n;
      at += n;
      if (left === 0) {
        have = 0;
        onFrame(head, total);
      }
    }
  };
}

/** The child: the fake server, and the client that drives one job at a time. */
async function peer(): Promise<void> {
  const send = (m: PeerMessage) => process.send!(m);
  const frames = workloads();
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => {});
    socket.on(
      'data',
      frameReader((head) => {
        const answer = head.readInt16BE(4) === 0 ? frames.produce.answer : frames.fetch.answer;
        const prefix = Buffer.alloc(8);
        prefix.writeInt32BE(4 + answer.length, 0);
        prefix.writeInt32BE(head.readInt32BE(8), 4);
        socket.cork();
        socket.write(prefix);
        socket.write(answer);
        socket.uncork();
      }),
    );
  });
  server.listen(0, '127.0.0.1', () => send({ t: 'port', port: (server.address() as net.AddressInfo).port }));
  process.on('message', (job: Job) => {
    const { request } = frames[job.workload];
    const socket = typeof job.target === 'number' ? net.connect({ host: '127.0.0.1', port: job.target }) : net.connect(job.target);
    if (typeof job.target === 'number') socket.setNoDelay(true);
    let correlationId = 0;
    let [counting, stopped, requests, bytes, started] = [false, false, 0, 0, 0];
    const next = () => {
      const head = Buffer.from(request.subarray(0, 12));
      head.writeInt32BE(++correlationId, 8);
      socket.cork();
      socket.write(head);
      socket.write(request.subarray(12));
      socket.uncork();
    };
    socket.on(
      'data',
      frameReader((_head, size) => {
        if (counting) [requests, bytes] = [requests + 1, bytes + size + request.length];
        if (!stopped) next();
      }),
    );
    socket.on('error', (err) => send({ t: 'error', message: err.message }));
    socket.on('close', () => {
      if (!stopped) send({ t: 'error', message: `${job.workload}: the connection closed mid-run` });
    });
    socket.on('connect', () => {
      for (let i = 0; i < inFlight; i++) next();
      setTimeout(() => {
        [counting, started] = [true, performance.now()];
        send({ t: 'window' });
        setTimeout(() => {
          [counting, stopped] = [false, true];
          send({ t: 'result', requests, bytes, ms: performance.now() - started });
          socket.destroy();
        }, seconds * 1000);
      }, WARM_UP_MS);
    });
  });
}

if (values.peer) {
  await peer();
} else {
  const child = fork(fileURLToPath(import.meta.url), ['--peer', ...process.argv.slice(2)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [first] = (await once(child, 'message')) as [PeerMessage];
  if (first.t !== 'port') throw new Error(`the peer said ${JSON.stringify(first)}`);
  const dirs: string[] = [];
  const open = (tap: WireTap | null) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiq-bench-relay-'));
    dirs.push(dir);
    const { relayed } = planRelay([{ host: '127.0.0.1', port: first.port, protocol: 'kafka' }], dir);
    return { relay: HostRelay.openSync(relayed, dir, null, tap), socket: path.join(dir, path.basename(relayed[0]!.socket)) };
  };
  const tap = new WireTap();
  let tapEvents = 0;
  tap.on('event', () => tapEvents++);
  const relays = { plain: open(null), decoding: open(tap) };
  type Variant = 'direct' | 'plain' | 'decoding';
  type Run = { mbps: number; rps: number; cpuUs: number; events: number };
  /** One run; the relay's CPU time (this process's) is taken over the measured window only. */
  const run = (workload: WorkloadName, variant: Variant) =>
    new Promise<Run>((resolve, reject) => {
      let cpu = process.cpuUsage();
      const onMessage = (m: PeerMessage) => {
        if (m.t === 'window') [cpu, tapEvents] = [process.cpuUsage(), 0];
        if (m.t === 'error') reject(new Error(`${variant}: ${m.message}`));
        if (m.t !== 'result') return;
        child.off('message', onMessage);
        const used = process.cpuUsage(cpu);
        resolve({ mbps: m.bytes / 1e6 / (m.ms / 1000), rps: m.requests / (m.ms / 1000), cpuUs: (used.user + used.system) / Math.max(1, m.requests), events: tapEvents / Math.max(1, m.requests) });
      };
      child.on('message', onMessage);
      child.send({ workload, target: variant === 'direct' ? first.port : relays[variant].socket } satisfies Job);
    });

  const frames = workloads();
  console.log(`Node ${process.version}; ${[path.basename(process.argv0), ...process.execArgv, path.relative(process.cwd(), process.argv[1]!), ...process.argv.slice(2)].join(' ')}`);
  console.log(`${rounds} rounds, ${seconds} s per variant after ${WARM_UP_MS / 1000} s warm-up, ${inFlight} requests in flight; MB/s = 10^6 frame bytes both ways per second\n`);
  const describe: Record<WorkloadName, string> = {
    produce: `produce: transactional Produce v11, ${records} records × ${valueBytes} B (${frames.produce.request.length} B request, ${frames.produce.answer.length + 8} B answer)`,
    fetch: `fetch: Fetch v11 header only (${frames.fetch.request.length} B request, ${frames.fetch.answer.length + 8} B answer, passes unread)`,
  };
  try {
    for (const workload of ['produce', 'fetch'] as const) {
      const runs: Record<Variant, Run[]> = { direct: [], plain: [], decoding: [] };
      for (let round = 0; round < rounds; round++) {
        // Alternate, so drift in the machine's load hits both relay variants alike.
        for (const variant of round % 2 ? (['decoding', 'plain', 'direct'] as const) : (['direct', 'plain', 'decoding'] as const)) runs[variant].push(await run(workload, variant));
      }
      const m = (variant: Variant, key: keyof Run) => median(runs[variant].map((r) => r[key]));
      console.log(describe[workload]);
      for (const variant of ['direct', 'plain', 'decoding'] as const) {
        const cpu = variant === 'direct' ? '' : `   relay CPU ${m(variant, 'cpuUs').toFixed(1).padStart(7)} µs/request`;
        const events = variant === 'decoding' ? `, ${m(variant, 'events').toFixed(1)} tap events/request` : '';
        const all = runs[variant].map((r) => r.mbps.toFixed(1)).join(', ');
        console.log(`  ${variant.padEnd(9)} ${m(variant, 'mbps').toFixed(1).padStart(8)} MB/s ${m(variant, 'rps').toFixed(0).padStart(7)} requests/s${cpu}${events}   [MB/s ${all}]`);
      }
      const throughput = ((m('plain', 'mbps') - m('decoding', 'mbps')) / m('plain', 'mbps')) * 100;
      const cpu = ((m('decoding', 'cpuUs') - m('plain', 'cpuUs')) / m('plain', 'cpuUs')) * 100;
      console.log(`  decoding vs plain: ${throughput.toFixed(1)}% less throughput, ${cpu.toFixed(1)}% more relay CPU per request\n`);
    }
  } finally {
    relays.plain.relay.close();
    relays.decoding.relay.close();
    child.kill();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}
