/**
 * Bad environments get one clear line that names the fix, a non-zero exit, and no JVM left behind.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../lab-server/core/paths.ts';

function runBrokerCli(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'lab-server/cli/broker.ts'], {
      cwd: ROOT_DIR,
      env: { ...process.env, KAFKA_BROKERS: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run broker in a bad environment', () => {
  it('names the fix when Java is missing', async () => {
    const result = await runBrokerCli({ JAVA_HOME: '/nonexistent-jdk', KAFKAIQ_BROKER_PORT: '9792' });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^kafkaiq: Java not found .*install Java 17\+/);
  });

  it('names the fix when the port is taken by something that is not Kafka', async () => {
    const squatter = net.createServer((socket) => {
      socket.on('error', () => {}); // our probes hang up abruptly
      socket.end('not kafka\n');
    });
    await new Promise<void>((resolve) => squatter.listen(9892, '127.0.0.1', resolve));
    try {
      const result = await runBrokerCli({ KAFKAIQ_BROKER_PORT: '9892' });
      expect(result.code).toBe(2);
      expect(result.stderr.trim()).toMatch(/^kafkaiq: Port 9892 on 127\.0\.0\.1 is taken by another program \(not Kafka\): stop it/);
    } finally {
      squatter.close();
    }
  });

  it('rejects a nonsense port setting', async () => {
    const result = await runBrokerCli({ KAFKAIQ_BROKER_PORT: 'ninety' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/KAFKAIQ_BROKER_PORT must be a port between 1024 and 55000, got "ninety"/);
  });
});
