import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';

export interface CourseServer {
  url: string;
  log: string[];
  stop(): Promise<void>;
}

/** Runs `npm start`'s entry point (site build if stale, lab server) on a free port. */
export function startCourseServer(brokers: string[]): Promise<CourseServer> {
  const log: string[] = [];
  const child: ChildProcess = spawn(process.execPath, ['--disable-sigusr1', '--import', 'tsx', 'lab-server/cli/start.ts'], {
    cwd: ROOT_DIR,
    env: { ...process.env, PORT: '0', KAFKA_BROKERS: brokers.join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    const onLine = (line: string) => {
      log.push(line);
      const ready = /KafkaIQ is ready: (http:\/\/\S+?)\/?(\s|$)/.exec(line);
      if (ready) resolve({ url: ready[1]!, log, stop });
    };
    readline.createInterface({ input: child.stdout! }).on('line', onLine);
    readline.createInterface({ input: child.stderr! }).on('line', onLine);
    child.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${log.slice(-20).join('\n')}`)));
  });
}
