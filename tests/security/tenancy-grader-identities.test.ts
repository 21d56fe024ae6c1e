/**
 * The grader's own Kafka identities are out of every learner's reach, and the grader acts only on
 * its own attempt's groups:
 *  - a program that inits the grader's seeding transactional id, or joins or commits in the
 *    grader's reader and monitor groups, is refused by the broker (its grants are LITERAL names,
 *    and the grader's live under another prefix), while the grade whose names it used passes;
 *  - a program that names 3,000 foreign group/member pairs over its channel to the grader gets
 *    at most a few LeaveGroups for its own groups, over one client: the server's file descriptors
 *    stay put and the other attempt's grade passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABS_DIR } from '../../lab-server/core/paths.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { createAttempt } from '../../lab-server/runner/attempt.ts';
import type { SessionListener } from '../../lab-server/runner/contract.ts';
import { innocentGrade, namespace, runAttack } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

const silent: SessionListener = { output: () => {}, diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };

/** The single-stage solution, plus a flood of 'member' events naming groups it does not own. */
function memberFlood(victimGroup: string, pairs: number): string {
  const solution = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');
  return `${solution}
// ---- the attack: claim memberships in groups of another attempt, and in thousands of made-up ones
const channel = (globalThis as any)[Symbol.for('kafkaiq.runner-channel')] as { send(e: object): void } | null;
for (let i = 0; i < ${pairs}; i++) {
  const groupId = i % 3 === 0 ? ${JSON.stringify(victimGroup)} : \`foreign-group-\${i}\`;
  channel?.send({ t: 'member', groupId, memberId: \`forged-member-\${i}-\${'x'.repeat(200)}\` });
}
`;
}

function openFds(): number {
  return fs.readdirSync('/proc/self/fd').length;
}

describe("the grader's identities and actions stay the attempt's own", () => {
  it("refuses a program that uses the grader's transactional id and groups; the grade they belong to passes", async () => {
    const victim = await innocentGrade(brokers);
    const groups = [`${victim.graderId}-txn-log-reader`, `${victim.graderId}-monitor`];
    const result = await runAttack(brokers, 'use-grader-identities', victim.namespace, {
      __SEEDER_TXN__: `${victim.graderId}-seeder`,
      __GRADER_GROUPS__: groups.join(','),
    }, 80_000);
    expect(result.allowed, result.output.slice(-12).join('\n')).toBe(false);
    expect(result.refusal).toMatch(/init the seeder id: [^;]*(TRANSACTIONAL_ID_AUTHORIZATION_FAILED|Transactional Id authorization failed)/i);
    for (const group of groups) {
      expect(result.refusal).toMatch(new RegExp(`commit in ${group}: [^;]*(GROUP_AUTHORIZATION_FAILED|Group authorization failed)`, 'i'));
      expect(result.refusal).toMatch(new RegExp(`join ${group}: [^;]*(GROUP_AUTHORIZATION_FAILED|Group authorization failed)`, 'i'));
    }
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 180_000);

  it('acts on no foreign group a program names over its channel: file descriptors stay put, the other grade passes', async () => {
    const baseline = openFds();
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, openFds())), 20);
    try {
      const victim = await innocentGrade(brokers);
      const lab = await loadLab('single-stage');
      const attack = createAttempt({
        lab,
        program: { kind: 'code', code: memberFlood(`${victim.namespace}-group`, 3_000) },
        brokers,
        control: null,
        namespace: namespace('member-flood'),
        mode: 'quick',
        listener: silent,
      });
      const [attackReport, victimReport] = await Promise.all([attack.grade(), victim.report]);
      await attack.deleteTopics();
      expect(victimReport.verdict, victimReport.message).toBe('pass');
      // The attack is a correct program besides the flood: its own kills still get their LeaveGroups.
      expect(attackReport.verdict, attackReport.message).toBe('pass');
      expect(attackReport.faults.filter((f) => f.kind === 'kill').length).toBeGreaterThan(0);
    } finally {
      clearInterval(sampler);
    }
    // Two grades at once (their processes, clients and database-free sinks) use a few dozen; a
    // client per named pair would have used thousands.
    expect(peak - baseline, `${baseline} -> ${peak} open file descriptors`).toBeLessThan(150);
  }, 240_000);
});
