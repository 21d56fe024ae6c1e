/**
 * The grader's relay: the only way out of a sandbox's network namespace. The program's env names
 * its endpoints (KAFKA_BROKERS, its database URL, its lab API URL, ...); for each one the relay
 * listens on a Unix socket the sandbox sees, and inside the sandbox a tiny forwarder
 * (inner-relay.mjs) listens on that same address on the namespace's loopback. Every other address
 * answers "connection refused": the namespace has nothing else.
 *
 * With a wire tap (runner/wire/wire-tap.ts), each connection is decoded in its protocol (Kafka,
 * PostgreSQL, HTTP/1.1, by the env variable that named the endpoint) and delivered message by
 * message, unchanged: the tap names each message's crash point and may hold one, a request before
 * the server sees it or an answer before the program does. That is where crash points live,
 * outside the program's process. A frame the decoder refuses ends that connection only.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describeError, KafkaIqError } from '../../../../src/shared/errors.ts';
import { segmentBuffers, type WireSegment } from '../../wire/contract.ts';
import type { Hold, TappedConnection, WireProtocol, WireTap } from '../../wire/wire-tap.ts';

export interface Endpoint {
  /** As the program's env names it (an IP literal or a host name). */
  host: string;
  port: number;
  /** The protocol spoken there, from how the env names it; null: copied unread. */
  protocol: WireProtocol | null;
}

/** What the forwarder inside the sandbox listens on, and where it sends each connection. */
export interface RelayedEndpoint extends Endpoint {
  /** The loopback address inside the namespace (the host's own for loopback names, 127.0.1.N for a name). */
  listenHost: string;
  /** The Unix socket, as the sandbox sees it. */
  socket: string;
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'postgres:': 5432, 'postgresql:': 5432 };
const URL_PROTOCOLS: Record<string, WireProtocol> = { 'http:': 'http', 'postgres:': 'postgres', 'postgresql:': 'postgres' };
const HOST_PORT = /^\[?([A-Za-z0-9.:-]+?)\]?:(\d{1,5})$/;
/** At most this many connections at once per endpoint: a program cannot exhaust the server's descriptors. */
const MAX_CONNECTIONS_PER_ENDPOINT = 64;
/**
 * New connections per endpoint: a burst, then a steady rate. One past it is closed at once and
 * never reaches the service, so a program's connect loop costs the broker (or the database)
 * nothing: it is bounded before any login, where the broker cannot yet tell whose it is.
 */
export const RELAY_CONNECTION_RATE = { perSecond: 100, burst: 200 };

/**
 * The endpoints an instance's env names: comma-separated host:port lists (KAFKA_BROKERS) and URLs
 * with a host (a database, an HTTP API). Generic on purpose: whatever env an attempt gives its
 * program, the addresses in it are exactly what the sandbox can reach.
 */
export function endpointsFromEnv(env: Record<string, string>): Endpoint[] {
  const found = new Map<string, Endpoint>();
  const add = (host: string, port: number, protocol: WireProtocol | null) => {
    const key = `${host.toLowerCase()}:${port}`;
    // Two variables naming one address in different protocols: copy it unread rather than guess.
    const seen = found.get(key);
    if (port > 0 && port < 65536) found.set(key, { host: host.toLowerCase(), port, protocol: seen && seen.protocol !== protocol ? null : protocol });
  };
  for (const [name, value] of Object.entries(env)) {
    if (value.length > 4096) continue;
    const parts = value.split(',').map((p) => p.trim());
    if (parts.every((p) => HOST_PORT.test(p))) {
      for (const p of parts) {
        const [, host, port] = HOST_PORT.exec(p)!;
        // A host:port list is Kafka's bootstrap list (KAFKA_BROKERS); a URL says its protocol by scheme.
        add(host!, Number(port), /BROKERS|BOOTSTRAP/i.test(name) ? 'kafka' : null);
      }
      continue;
    }
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) continue;
    try {
      const url = new URL(value);
      const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol];
      if (url.hostname && port) add(url.hostname.replace(/^\[|\]$/g, ''), port, URL_PROTOCOLS[url.protocol] ?? null);
    } catch {
      // Not a URL after all (a JSON value, say): not an endpoint.
    }
  }
  return [...found.values()];
}

const isLoopbackIp = (host: string) => /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === '::1';
const isIp = (host: string) => net.isIP(host) !== 0;

/** The address inside the namespace for each endpoint, and the hosts file that makes names point there. */
export function planRelay(endpoints: Endpoint[], socketDir: string): { relayed: RelayedEndpoint[]; hostsFile: string } {
  const names = new Map<string, string>([['localhost', '127.0.0.1']]);
  const relayed = endpoints.map((e, i) => {
    let listenHost: string;
    if (isLoopbackIp(e.host)) listenHost = e.host;
    else if (isIp(e.host)) {
      throw new KafkaIqError(
        'INVALID_INPUT',
        `The sandbox relays loopback addresses and host names, not ${e.host}:${e.port}: name that host (e.g. in /etc/hosts) in KAFKA_BROKERS / DATABASE_URL, or run with KAFKAIQ_SANDBOX=off on a single-learner machine.`,
      );
    } else {
      if (!names.has(e.host)) names.set(e.host, `127.0.1.${names.size}`);
      listenHost = names.get(e.host)!;
    }
    return { ...e, listenHost, socket: path.join(socketDir, `s${i}.sock`) };
  });
  // The sandbox's own host name (bubblewrap's --hostname) resolves too: a JVM asks for it at start.
  const hostsFile = [...names].map(([name, ip]) => `${ip}\t${name}`).join('\n') + '\n127.0.0.1\tsandbox\n::1\tlocalhost ip6-localhost\n';
  return { relayed, hostsFile };
}

/** The host side: one Unix socket per endpoint, each connection copied to the real address. */
export class HostRelay {
  private readonly servers: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly tap: WireTap | null) {}

  /**
   * `hostDir` is where the sockets live on the host; the sandbox binds it at `path.dirname(socket)`.
   * Synchronous: a Unix socket is bound when listen() returns, so the sandbox can start right away.
   */
  static openSync(relayed: RelayedEndpoint[], hostDir: string, owner: { uid: number; gid: number } | null, tap: WireTap | null = null): HostRelay {
    const relay = new HostRelay(tap);
    try {
      for (const endpoint of relayed) relay.listen(endpoint, path.join(hostDir, path.basename(endpoint.socket)), owner);
    } catch (err) {
      relay.close();
      throw err;
    }
    return relay;
  }

  private listen(endpoint: RelayedEndpoint, file: string, owner: { uid: number; gid: number } | null): void {
    const admit = tokenBucket(RELAY_CONNECTION_RATE.perSecond, RELAY_CONNECTION_RATE.burst);
    const server = net.createServer((inside) => {
      if (!admit()) {
        inside.destroy();
        return;
      }
      const outside = net.connect({ host: endpoint.host, port: endpoint.port });
      this.sockets.add(inside);
      this.sockets.add(outside);
      const end = () => {
        inside.destroy();
        outside.destroy();
        this.sockets.delete(inside);
        this.sockets.delete(outside);
      };
      inside.on('error', end).on('close', end);
      outside.on('error', end).on('close', end);
      if (this.tap && endpoint.protocol) {
        const tap = this.tap;
        const protocol = endpoint.protocol;
        const connection = tap.connection(protocol);
        const refuse = (err: unknown) => {
          tap.refused(protocol, describeError(err));
          end();
        };
        pumpMessages(inside, outside, connection.requests, (m) => connection.request(m), refuse);
        connection.wakeResponses = pumpMessages(outside, inside, connection.responses, (m) => connection.response(m), refuse);
      } else {
        inside.pipe(outside);
        outside.pipe(inside);
      }
    });
    server.maxConnections = MAX_CONNECTIONS_PER_ENDPOINT;
    // A bind error shows up as connections refused inside the sandbox; the program reports those.
    server.on('error', () => {});
    server.listen(file);
    server.unref();
    this.servers.push(server);
    if (!fs.existsSync(file)) throw new KafkaIqError('INTERNAL', `the sandbox relay could not listen on ${path.basename(file)}`);
    fs.chmodSync(file, 0o600);
    if (owner) fs.chownSync(file, owner.uid, owner.gid);
  }

  close(): void {
    for (const server of this.servers) server.close();
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}

/**
 * Copies one direction message by message: each segment the decoder cuts is written as it is,
 * unless `hold` holds it, and then everything after it waits too (the protocol's order is kept).
 * A held message is written when its hold says 'forward', and never when it says 'drop' (the
 * instance was killed; its connection is closing) or 'answered' (the relay answered it in the
 * server's place; what follows it goes on). Returns a wake-up: the decoder may have a message of
 * the relay's own to give without new bytes.
 */
export function pumpMessages(
  from: net.Socket,
  to: net.Socket,
  decoder: TappedConnection['requests'],
  hold: (message: unknown) => Hold,
  refuse: (err: unknown) => void,
): () => void {
  const queue: WireSegment<unknown>[] = [];
  let holding = false;
  let ended = false;
  let waitingForDrain = false;
  const drain = () => {
    while (!holding && queue.length) {
      const segment = queue.shift()!;
      let held: Hold = null;
      try {
        held = segment.message === null ? null : hold(segment.message);
      } catch (err) {
        refuse(err);
        return;
      }
      if (held) {
        holding = true;
        from.pause();
        held.then((outcome) => {
          if (outcome === 'drop' || to.destroyed) return;
          if (outcome === 'forward') write(to, segment);
          holding = false;
          if (!waitingForDrain) from.resume();
          drain();
        }, refuse);
        return;
      }
      if (!write(to, segment) && !waitingForDrain) {
        waitingForDrain = true;
        from.pause();
        to.once('drain', () => {
          waitingForDrain = false;
          if (!holding) from.resume();
        });
      }
    }
    if (ended && !holding && !queue.length) to.end();
  };
  const take = (chunk: Buffer) => {
    try {
      for (const segment of decoder.push(chunk)) queue.push(segment);
    } catch (err) {
      refuse(err);
      return;
    }
    drain();
  };
  from.on('data', take);
  from.on('end', () => {
    ended = true;
    drain();
  });
  const nothing = Buffer.alloc(0);
  return () => {
    if (!ended && !to.destroyed) take(nothing);
  };
}

/** Writes a segment's chunks in one go; false when the socket asks to wait for 'drain'. */
function write(to: net.Socket, segment: WireSegment<unknown>): boolean {
  const buffers = segmentBuffers(segment);
  if (buffers.length === 1) return to.write(buffers[0]!);
  to.cork();
  let ok = true;
  for (const buffer of buffers) ok = to.write(buffer) && ok;
  to.uncork();
  return ok;
}

/** Whether one more event fits: `burst` at once, refilled at `perSecond`. */
function tokenBucket(perSecond: number, burst: number): () => boolean {
  let tokens = burst;
  let updated = performance.now();
  return () => {
    const now = performance.now();
    tokens = Math.min(burst, tokens + ((now - updated) / 1000) * perSecond);
    updated = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
}
