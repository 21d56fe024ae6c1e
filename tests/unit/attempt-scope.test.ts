/**
 * An error that escapes an attempt's work into the event loop (a throwing timer, an unhandled
 * rejection) ends that attempt, and the server process carries on; outside every attempt, Node's
 * own behaviour (exit) is kept. In a child process, since the guard hooks the whole process.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';

const script = `
const { attemptScope, installAttemptCrashGuard } = await import('./lab-server/runner/attempt-scope.ts');
installAttemptCrashGuard((line) => console.log('LOG', line));
const failed = [];
const attempt = (name) => ({ fail: (err) => failed.push(name + ': ' + err.message) });
attemptScope.run(attempt('a1'), () => setTimeout(() => { throw new Error('boom in a timer'); }, 10));
attemptScope.run(attempt('a2'), () => { void Promise.reject(new Error('lost rejection')); });
await new Promise((r) => setTimeout(r, 200));
console.log('FAILED', JSON.stringify(failed.sort()));
console.log('STILL SERVING');
if (process.env.OUTSIDE) setTimeout(() => { throw new Error('server bug'); }, 10);
`;

const run = (env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT_DIR, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });

describe('an error escaping an attempt', () => {
  it('ends that attempt only; the process keeps serving', () => {
    const result = run();
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('FAILED ["a1: boom in a timer","a2: lost rejection"]');
    expect(result.stdout).toContain('STILL SERVING');
    expect(result.stdout).toMatch(/LOG an attempt failed with an uncaught exception: boom in a timer/);
  });

  it('outside every attempt, still ends the process', () => {
    const result = run({ OUTSIDE: '1' });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('server bug');
  });
});
