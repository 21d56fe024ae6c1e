/**
 * The wrapper's side of the channel to the runner: newline-delimited JSON on file descriptor 3
 * (a socket pair the runner made), shared by every wrapper bundled into the program (kafkajs,
 * pg). Not Node's IPC channel: the runner reads this one through a bounded line splitter, so a
 * program that writes a gigantic message only cuts its own channel.
 */
import net from 'node:net';
import type { ChildEvent, RunnerCommand } from './protocol.ts';
import { CHANNEL_FD_ENV } from './protocol.ts';

interface Channel {
  send(event: ChildEvent): void;
  onCommand(listener: (command: RunnerCommand) => void): void;
  readonly open: boolean;
}

const KEY = Symbol.for('kafkaiq.runner-channel');

function openChannel(): Channel | null {
  const fd = Number(process.env[CHANNEL_FD_ENV]);
  if (!Number.isInteger(fd) || fd < 3) return null;
  const socket = new net.Socket({ fd, readable: true, writable: true });
  const listeners: Array<(command: RunnerCommand) => void> = [];
  let open = true;
  let pending = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) !== -1) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      let command: RunnerCommand;
      try {
        command = JSON.parse(line);
      } catch {
        continue; // the runner only sends JSON; nothing to act on
      }
      for (const l of listeners) l(command);
    }
  });
  // The channel closes when the runner dies: follow it at once.
  const gone = () => {
    open = false;
    process.exit(70);
  };
  socket.on('end', gone).on('close', gone).on('error', gone);
  // Keep the channel from holding the program open on its own.
  socket.unref();
  return {
    send: (event) => {
      if (open) socket.write(`${JSON.stringify(event)}\n`);
    },
    onCommand: (listener) => void listeners.push(listener),
    get open() {
      return open;
    },
  };
}

/** The process's one channel (null when the program was not started by the runner). */
export function runnerChannel(): Channel | null {
  const g = globalThis as { [KEY]?: Channel | null };
  if (!(KEY in g)) g[KEY] = openChannel();
  return g[KEY] ?? null;
}
