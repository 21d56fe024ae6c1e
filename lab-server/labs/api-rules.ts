/**
 * Load-time rules for labs that use the lab HTTP API (called from load-lab's assertConsistent):
 * each problem is one line naming the field, like the other lab rules.
 */
import type { LabDefinition } from '../../src/shared/lab.ts';
import { isApiFault } from '../../src/shared/report.ts';

const EFFECT_CHECKS = ['no-duplicate-effects', 'no-lost-effects', 'effects-correct'] as const;

export function apiLabProblems(lab: LabDefinition): string[] {
  const problems: string[] = [];
  const apiFaults = [...lab.faults.full, ...lab.faults.quick].filter((f) => isApiFault(f.kind));
  // Only pipeline labs call the lab API: a monitor lab's schema has no api block.
  const api = lab.kind === 'pipeline' ? lab.api : undefined;
  if (!api) {
    if (lab.checks.includes('saga-outcome')) problems.push('checks: "saga-outcome" needs an api block with service "saga"');
    if (apiFaults.length) problems.push(`faults: ${apiFaults[0]!.kind} needs an api block (the program must call the lab API)`);
    return problems;
  }
  if (!lab.env.some((e) => e.name === api.env)) problems.push(`env: the api block passes ${api.env}; describe it`);
  if (!lab.checks.some((c) => (EFFECT_CHECKS as readonly string[]).includes(c))) {
    problems.push(`checks: a lab with an api block must list at least one of ${EFFECT_CHECKS.join(', ')} (else its effects are never verified)`);
  }
  // saga-outcome reads the saga service's effects (<step>:<orderId>); other services have none.
  if (lab.checks.includes('saga-outcome') && api.service !== 'saga') problems.push('checks: "saga-outcome" needs api.service "saga"');
  if (apiFaults.some((f) => f.at.length)) problems.push('faults: api-slow, api-error and api-timeout hit the next API calls; they take no crash points (at)');
  return problems;
}
