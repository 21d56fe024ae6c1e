/**
 * Runs a `--cmd` program inside its sandbox: first the relay's forwarders (inner-relay.mjs), so
 * every address the program's env names answers on the namespace's loopback, then the command in
 * a shell, as the program itself. This process only waits: it ends with the command's status, and
 * a SIGTERM meant for the command (the grader sends it to every process of the sandbox) leaves it
 * alone, so the command's own clean shutdown still has its connections. Plain JavaScript, no loader.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

await import('./relay.mjs');

const command = process.argv[2];
if (!command) {
  process.stderr.write('inner-command: no command given\n');
  process.exit(2);
}
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => {});
// No `exec` in front: a command may be a list (`umask 077 && kcat ...`), which exec would cut short.
const child = spawn('/bin/sh', ['-c', command], { stdio: 'inherit' });
child.on('error', (err) => {
  process.stderr.write(`inner-command: cannot start /bin/sh: ${err.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
