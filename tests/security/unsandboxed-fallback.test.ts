/**
 * Where the sandbox cannot run (or KAFKAIQ_SANDBOX=off): the server serves one learner on
 * loopback, says so on start and in the workbench's welcome, and refuses any other HOST with
 * one line naming the fix.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { startCourseServer } from '../support/course-server.ts';
import { Learner } from './support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

describe('without the sandbox', () => {
  it('refuses a non-loopback HOST with one line naming the fix', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'lab-server/cli/start.ts', '--no-build'], {
      cwd: ROOT_DIR,
      env: { ...process.env, KAFKAIQ_SANDBOX: 'off', HOST: '0.0.0.0', PORT: '0', KAFKA_BROKERS: brokers.join(',') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^kafkaiq: Refusing to serve on HOST=0\.0\.0\.0 without a sandbox \(KAFKAIQ_SANDBOX=off\): install bubblewrap/);
  }, 90_000);

  it('serves loopback with a warning on start and in the workbench', async () => {
    const server = await startCourseServer(brokers, 'start', { env: { KAFKAIQ_SANDBOX: 'off' } });
    try {
      expect(server.log.join('\n')).toMatch(/Programs run UNSANDBOXED \(KAFKAIQ_SANDBOX=off\)/);
      const learner = await Learner.connect(server.url);
      const welcome = learner.messages.find((m) => m.type === 'welcome');
      expect(welcome && 'unsandboxed' in welcome ? welcome.unsandboxed : null).toMatch(/UNSANDBOXED/);
      learner.close();
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('with the sandbox, start says so and the welcome carries no warning', async () => {
    const server = await startCourseServer(brokers, 'start');
    try {
      expect(server.log.join('\n')).toMatch(/Sandbox: bubblewrap, uid \d+, cgroup v[12] limits/);
      const learner = await Learner.connect(server.url);
      const welcome = learner.messages.find((m) => m.type === 'welcome');
      expect(welcome && 'unsandboxed' in welcome ? welcome.unsandboxed : 'missing').toBeNull();
      learner.close();
    } finally {
      await server.stop();
    }
  }, 120_000);
});
