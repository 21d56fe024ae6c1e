import { SERVER_V8_FLAGS } from '../../bin/runtime-pin.mjs';
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';

export interface CourseServer {
  url: string;
  log: string[];
  stop(): Promise<void>;
}

const ENTRIES = {
  /** `npm start` on the site the run's global setup built (--no-build, see global-setup.ts), lab server. */
  start: { file: 'lab-server/cli/start.ts', ready: /KafkaIQ is ready: (http:\/\/\S+?)\/?(\s|$)/ },
  /** `npm run dev`: Astro's dev server with the lab server behind its proxy. */
  dev: { file: 'lab-server/cli/dev.ts', ready: /KafkaIQ dev server: (http:\/\/\S+?)\/?(\s|$)/ },
} as const;

/** What vitest sets in its workers' environment (Vite's import.meta.env names among them). */
const VITEST_NAMES = new Set(['NODE_ENV', 'MODE', 'DEV', 'PROD', 'SSR', 'BASE_URL', 'TEST']);

/**
 * The environment a user's shell would give the server: without what vitest sets for its own
 * workers, which Astro's dev server and build would otherwise take as theirs (DEV=1 made a build
 * whose search said it works only in production builds).
 */
function serverEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (VITEST_NAMES.has(name) || name.startsWith('VITEST')) delete env[name];
  return env;
}

/** Runs `npm start`'s (or `npm run dev`'s) entry point on a free port. */
export function startCourseServer(
  brokers: string[],
  entry: keyof typeof ENTRIES = 'start',
  options: { args?: string[]; env?: Record<string, string> } = {},
): Promise<CourseServer & { pid: number }> {
  const log: string[] = [];
  const args = entry === 'start' ? ['--no-build', ...(options.args ?? [])] : (options.args ?? []);
  const child: ChildProcess = spawn(process.execPath, [...SERVER_V8_FLAGS, '--disable-sigusr1', '--import', 'tsx', ENTRIES[entry].file, ...args], {
    cwd: ROOT_DIR,
    env: { ...serverEnv(), PORT: '0', KAFKA_BROKERS: brokers.join(','), ...options.env },
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
      const ready = ENTRIES[entry].ready.exec(line);
      if (ready) resolve({ url: ready[1]!, log, stop, pid: child.pid! });
    };
    readline.createInterface({ input: child.stdout! }).on('line', onLine);
    readline.createInterface({ input: child.stderr! }).on('line', onLine);
    child.once('exit', (code) => reject(new Error(`${entry} exited (${code}):\n${log.slice(-20).join('\n')}`)));
  });
}
