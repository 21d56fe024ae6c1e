/**
 * One runtime for everything: the Node pinned in package.json (the `node` package, installed into
 * node_modules/.bin) runs the tests, the lab server and every learner program, whatever Node the
 * host has. A learner program is run the way the workbench's Run button runs it.
 */
import { SERVER_V8_FLAGS } from '../bin/runtime-pin.mjs';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../lab-server/core/paths.ts';
import { createLabSession } from '../lab-server/runner/lab-session.ts';
import type { SessionListener } from '../lab-server/runner/contract.ts';
import { testBrokers } from './support/brokers.ts';

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT_DIR, 'package.json'), 'utf8'));
const PINNED = `v${manifest.optionalDependencies.node}`;

describe('the pinned Node runtime', () => {
  it('is an exact version, and the one running these tests', () => {
    expect(manifest.optionalDependencies.node).toMatch(/^\d+\.\d+\.\d+$/);
    expect(process.version).toBe(PINNED);
    expect(fs.realpathSync(process.execPath)).toBe(fs.realpathSync(path.join(ROOT_DIR, 'node_modules/node/bin/node')));
  });

  it('runs a learner program', async () => {
    const lines: string[] = [];
    let sawVersion: () => void = () => {};
    const printed = new Promise<void>((resolve) => (sawVersion = resolve));
    const listener: SessionListener = {
      output: (_instance, stream, line) => {
        lines.push(`${stream}: ${line}`);
        if (line.startsWith('runtime ')) sawVersion();
      },
      diagnostics: (diagnostics) => lines.push(`diagnostics: ${JSON.stringify(diagnostics)}`),
      progress: () => {},
      state: () => {},
      fault: () => {},
    };
    const session = createLabSession({ sessionId: 'runtime-test', listener, cluster: { brokers: testBrokers(), control: null } });
    const program = `console.log('runtime ' + process.version);\nsetInterval(() => {}, 1000);\n`;
    const running = session.run('single-stage', program);
    await Promise.race([printed, running, new Promise((r) => setTimeout(r, 45_000))]);
    await session.stop();
    await running;
    await session.dispose();
    expect(lines.filter((line) => line.includes('runtime '))[0], lines.join('\n')).toBe(`stdout: runtime ${PINNED}`);
  }, 60_000);

  // These machines (and CI) have the host's own Node 20 at /usr/bin/node: an entry point started by it
  // must end up on the pinned runtime, as \`node bin/kafkaiq.mjs\` and the npm scripts do.
  // The grading processes' V8 flags (bin/runtime-pin.mjs) come with the move, and an entry point
  // started by the pinned Node without them (`npx kafkaiq`: a shebang takes no flags) gets them too.
  it('starts every entry point with the grading V8 flags', () => {
    const env = { ...process.env, KAFKAIQ_ANY_NODE: '' };
    const show = 'console.log(process.version, process.execArgv.filter((a) => a.startsWith("--initial-old-space-size")).join(" "))';
    const script = spawnSync(process.execPath, ['--import', './bin/pinned-node.mjs', '-e', show], { cwd: ROOT_DIR, encoding: 'utf8', env });
    expect(script.stdout.trim(), script.stderr).toBe(`${PINNED} ${SERVER_V8_FLAGS.join(' ')}`);
  });

  const hostNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => fs.existsSync(p) && fs.realpathSync(p) !== fs.realpathSync(process.execPath));
  it.runIf(hostNode)('moves an entry point started by another Node onto the pinned one', () => {
    const env = { ...process.env, KAFKAIQ_ANY_NODE: '' };
    const script = spawnSync(hostNode!, ['--import', './bin/pinned-node.mjs', '-e', 'console.log(process.version)'], { cwd: ROOT_DIR, encoding: 'utf8', env });
    expect(script.stdout.trim(), script.stderr).toBe(PINNED);
    const cli = spawnSync(hostNode!, ['bin/kafkaiq.mjs', 'labs'], { cwd: ROOT_DIR, encoding: 'utf8', env });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toContain('single-stage');
  });
});

describe('the install check (npm postinstall)', () => {
  const check = (root: string, userAgent: string) =>
    spawnSync(process.execPath, [path.join(root, 'bin/check-install.mjs')], { encoding: 'utf8', env: { ...process.env, npm_config_user_agent: userAgent } });

  it('passes on this install', () => {
    const result = check(ROOT_DIR, 'npm/11.19.1 node/v20.20.2 linux x64 workspaces/false');
    expect(result.status, result.stderr).toBe(0);
  });

  it('refuses npm older than 9 in one line naming the fix', () => {
    const result = check(ROOT_DIR, 'npm/8.19.4 node/v16.20.2 linux x64 workspaces/false');
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^kafkaiq: installing KafkaIQ needs npm 9 or newer \(this is npm\/8\.19\.4\): run 'npm install -g npm@11'/)]);
  });

  it('says in one line what to do when the pinned runtime did not download', () => {
    // A copy of the project without node_modules: what a failed optional download leaves behind.
    fs.mkdirSync(path.join(ROOT_DIR, '.kafkaiq'), { recursive: true });
    const root = fs.mkdtempSync(path.join(ROOT_DIR, '.kafkaiq', 'install-check-'));
    try {
      fs.mkdirSync(path.join(root, 'bin'));
      for (const file of ['bin/check-install.mjs', 'bin/runtime-pin.mjs']) fs.copyFileSync(path.join(ROOT_DIR, file), path.join(root, file));
      fs.copyFileSync(path.join(ROOT_DIR, 'package.json'), path.join(root, 'package.json'));
      const result = check(root, 'npm/11.19.1 node/v20.20.2 linux x64 workspaces/false');
      expect(result.status).toBe(1);
      expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining(`the pinned Node ${manifest.optionalDependencies.node} did not install`)]);
      expect(result.stderr).toContain("run 'npm install' again");
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
