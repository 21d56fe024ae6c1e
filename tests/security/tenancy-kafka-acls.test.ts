/**
 * Tenancy on the real broker: each attack program, run as a learner's program with exactly an
 * attempt's env and credentials, is refused by the broker's authorizer, while an innocent learner's
 * grade runs at the same time in the namespace the attacks aim at, and still passes. The grants
 * are LITERAL: a name of the attacker's own namespace that the lab did not give it is refused too.
 */
import { describe, expect, it } from 'vitest';
import { innocentGrade, runAttack } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

describe('an attempt user may touch only its own namespace', () => {
  const cases: [attack: string, refusal: RegExp][] = [
    ['read-other-topic', /TOPIC_AUTHORIZATION_FAILED/],
    ['fence-transactional-id', /Transactional Id authorization failed/i],
    ['join-other-group', /Group authorization failed/i],
    ['delete-records-own-output', /TOPIC_AUTHORIZATION_FAILED/],
    ['alter-broker-config', /CLUSTER_AUTHORIZATION_FAILED/],
    ['create-topic', /TOPIC_AUTHORIZATION_FAILED/],
    // Exact grants: even inside its own namespace, only the names the lab gives it.
    ['unlisted-own-names', /an unlisted transactional id: [^;]*(TRANSACTIONAL_ID_AUTHORIZATION_FAILED|Transactional Id authorization failed)[^;]*; an unlisted group: [^;]*(GROUP_AUTHORIZATION_FAILED|Group authorization failed)/i],
  ];
  for (const [attack, refusal] of cases) {
    it(`refuses ${attack}, and the victim's concurrent grade passes`, async () => {
      const victim = await innocentGrade(brokers);
      const result = await runAttack(brokers, attack, victim.namespace);
      expect(result.allowed, result.output.slice(-10).join('\n')).toBe(false);
      expect(result.refusal).toMatch(refusal);
      const report = await victim.report;
      expect(report.verdict, report.message).toBe('pass');
    }, 120_000);
  }
});
