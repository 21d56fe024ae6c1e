/** A WebSocket client of the real lab server for the tenancy tests: every server message validated and queued. */
import WebSocket from 'ws';
import { serverMessageSchema, type ServerMessage } from '../../src/shared/messages.ts';

export class WsClient {
  /** Every client opened, so a test can close what an earlier one left open (the per-IP cap counts them). */
  static readonly all = new Set<WsClient>();

  static async closeAll(): Promise<void> {
    const open = [...WsClient.all];
    WsClient.all.clear();
    await Promise.all(open.map((c) => c.close()));
    // The server counts a socket out when its TCP connection closes, a moment after ours.
    await new Promise((r) => setTimeout(r, 300));
  }

  readonly ws: WebSocket;
  readonly messages: ServerMessage[] = [];
  private waiters: (() => void)[] = [];

  private constructor(url: string, headers: Record<string, string>) {
    this.ws = new WebSocket(url, { headers });
    WsClient.all.add(this);
    this.ws.on('message', (data) => {
      this.messages.push(serverMessageSchema.parse(JSON.parse(String(data))));
      this.waiters.splice(0).forEach((wake) => wake());
    });
  }

  /** Opens a socket; resolves with the client, or with the HTTP status the upgrade was refused with. */
  static open(httpUrl: string, headers: Record<string, string> = { Origin: httpUrl }): Promise<WsClient | number> {
    const client = new WsClient(`${httpUrl.replace(/^http/, 'ws')}/ws`, headers);
    return new Promise((resolve) => {
      client.ws.once('open', () => resolve(client));
      client.ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      client.ws.once('error', () => resolve(0));
    });
  }

  static async session(httpUrl: string, sessionId: string): Promise<WsClient> {
    const client = await WsClient.open(httpUrl);
    if (typeof client === 'number') throw new Error(`the server refused the WebSocket (HTTP ${client})`);
    client.send({ type: 'hello', protocol: 1, sessionId });
    await client.next('welcome');
    return client;
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  /** The next message of that type (taken from the queue), waiting up to timeoutMs. */
  async next<T extends ServerMessage['type']>(type: T, timeoutMs = 10_000): Promise<Extract<ServerMessage, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.messages.findIndex((m) => m.type === type);
      if (i >= 0) return this.messages.splice(i, 1)[0] as Extract<ServerMessage, { type: T }>;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no "${type}" within ${timeoutMs} ms; got ${this.messages.map((m) => m.type).join(', ') || 'nothing'}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
      setTimeout(() => (this.ws.terminate(), resolve()), 2_000).unref();
    });
  }
}
