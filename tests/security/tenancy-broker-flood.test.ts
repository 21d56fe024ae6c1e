/**
 * A broker that bounds every principal and survives: one attempt's program floods the shared
 * broker from inside its own grants (tests/security/attacks/flood-broker.ts: pipelined
 * InitProducerId on its granted ids, over-long transactional ids up to 4 MB and one request over
 * the size bound, a connection + SASL login loop), while another attempt's quick grade of the
 * single-stage solution runs. The victim's grade passes, the broker answers the grader's metadata
 * request within 5 s throughout, and the broker's per-user bounds held: no over-long id got past
 * the authorizer, and the InitProducerIds and logins it accepted stay within the configured rates.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { answersWithin } from '../../lab-server/broker/probes.ts';
import { ATTEMPT_BROKER_LIMITS } from '../../lab-server/broker/server-properties.ts';
import { innocentGrade, runAttack } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();
const FLOOD_MS = 25_000;

interface FloodCounts {
  initAccepted: number;
  initRefused: number;
  longAccepted: number;
  longRefused: number;
  longClosed: number;
  loginsOk: number;
  loginsRefused: number;
}

describe('one attempt flooding the broker within its grants', () => {
  it("leaves another attempt's grade passing and the broker answering within 5 s", async () => {
    // The grader's view of the broker, every half second: a metadata request with a 5 s deadline.
    const latencies: number[] = [];
    const failures: string[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const answer = await answersWithin(brokers[0]!, 5_000);
        if (answer.ok) latencies.push(answer.ms);
        else failures.push(answer.reason);
        await sleep(500);
      }
    })();
    try {
      const attack = runAttack(brokers, 'flood-broker', 'unused', { __DURATION_MS__: String(FLOOD_MS) }, FLOOD_MS + 60_000);
      await sleep(5_000); // the flood is under way
      const victim = await innocentGrade(brokers);
      const [result, report] = await Promise.all([attack, victim.report]);
      const counts = result as unknown as FloodCounts;
      console.log(`flood: ${JSON.stringify(counts)}; metadata answered ${latencies.length} times, slowest ${Math.max(...latencies)} ms`);

      expect(report.verdict, report.message).toBe('pass');
      expect(failures).toEqual([]);
      expect(Math.max(...latencies)).toBeLessThan(5_000);

      const limits = ATTEMPT_BROKER_LIMITS;
      const seconds = FLOOD_MS / 1000 + 5;
      // Over-long ids: refused by the authorizer, or the connection dropped over the size bound; never accepted.
      expect(result.allowed, result.output.slice(-10).join('\n')).toBe(false);
      expect(counts.longAccepted).toBe(0);
      expect(counts.longRefused).toBeGreaterThan(0);
      expect(counts.longClosed).toBeGreaterThan(0);
      // InitProducerId: past the burst, only the rate got through, and the rest was refused.
      expect(counts.initRefused).toBeGreaterThan(0);
      expect(counts.initAccepted).toBeLessThanOrEqual(limits.initProducerIdsBurst + limits.initProducerIdsPerSecond * seconds);
      // Logins: the same, with the lockout on top.
      expect(counts.loginsRefused).toBeGreaterThan(0);
      expect(counts.loginsOk).toBeLessThanOrEqual(limits.authenticationsBurst + limits.authenticationsPerSecond * seconds);
    } finally {
      probing = false;
      await probe;
    }
  }, 180_000);
});
