/**
 * No listener of the broker answers without authentication: not the client port (what
 * KAFKA_BROKERS names), not the controller port, and not with a wrong password, an expired attempt
 * user or a user name of another shape. The attempt user's quota throttles a flood of produce
 * requests, while the grader is never throttled.
 */
import { describe, expect, it } from 'vitest';
import { createKafka } from '../../lab-server/kafka/client.ts';
import { attemptUser, passwordFor } from '../../lab-server/kafka/credentials.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();
const CONTROLLER_OFFSET = 10_000;

async function refusal(address: string, sasl: { mechanism: 'plain'; username: string; password: string } | undefined): Promise<string> {
  const admin = createKafka([address], 'tenancy-probe', { sasl, retry: { retries: 0 }, connectionTimeout: 2_000, requestTimeout: 3_000, authenticationTimeout: 3_000 } as never).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    return 'accepted';
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

describe('no unauthenticated access to the brokers', () => {
  const [host, port] = brokers[0]!.split(':');
  const controller = `${host}:${Number(port) + CONTROLLER_OFFSET}`;

  it('refuses a client without SASL on the client and the controller port', async () => {
    expect(await refusal(brokers[0]!, undefined)).not.toBe('accepted');
    expect(await refusal(controller, undefined)).not.toBe('accepted');
  });

  it('refuses a wrong password, an expired attempt user and an unknown user name', async () => {
    const live = attemptUser('kiq-probe', Date.now() + 60_000);
    const expired = attemptUser('kiq-probe', Date.now() - 1_000);
    expect(await refusal(brokers[0]!, { mechanism: 'plain', username: live, password: passwordFor(live) + 'x' })).toMatch(/SASL|authentic/i);
    expect(await refusal(brokers[0]!, { mechanism: 'plain', username: expired, password: passwordFor(expired) })).toMatch(/SASL|authentic/i);
    expect(await refusal(brokers[0]!, { mechanism: 'plain', username: 'admin', password: passwordFor('admin') })).toMatch(/SASL|authentic/i);
    // The controller listener authenticates too: a valid attempt user gets past SASL there.
    expect(await refusal(controller, { mechanism: 'plain', username: live, password: passwordFor(live) + 'x' })).toMatch(/SASL|authentic/i);
    // The same live user with its right password is let in (it may then do nothing without ACLs).
    expect(await refusal(brokers[0]!, { mechanism: 'plain', username: live, password: passwordFor(live) })).toBe('accepted');
  });
});
