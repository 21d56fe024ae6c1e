/**
 * What a lab is, in the facts an instructor (or a curious learner) asks about: its kind, its
 * fault plans, its checks and which fixtures prove each can fail, its time limits and the clients
 * it grades. One source for `kafkaiq labs` (text) and the site's Labs page (built from the same
 * lab definitions at build time).
 */
import type { FaultSpec, LabDefinition } from './lab.ts';
import { checkCoverageRows, type CheckCoverageRow, type FixtureDeclaration } from './lab-coverage.ts';
import { CLIENT_INFO, KAFKA_CLIENTS } from './clients.ts';

/**
 * Clients a learner's program may use. Programs are TypeScript on kafkajs (patched, see
 * patches/kafkajs+2.2.4.patch); other languages enter a lab only as command fixtures.
 */

export interface LabFacts {
  id: string;
  title: string;
  summary: string;
  kind: LabDefinition['kind'];
  cluster: LabDefinition['cluster'];
  instances: number;
  faults: { full: string[]; quick: string[] };
  checks: CheckCoverageRow[];
  timeLimitMs: number;
  quickTimeLimitMs: number;
  clients: readonly string[];
  /** Programs in other languages the matrix grades (e.g. Kafka's own TransactionalMessageCopier). */
  commands: { name: string; expect: 'pass' | 'fail' }[];
}

/** One fault of a plan as a short phrase, e.g. "kill at after:send | before:commit (instance 3)". */
export function describeFault(fault: FaultSpec): string {
  const parts: string[] = [fault.kind];
  if (fault.at.length) parts.push(`at ${fault.at.join(' | ')}`);
  const details: string[] = [];
  if (fault.topic) details.push(`stage writing ${fault.topic}`);
  if (fault.instance !== 1) details.push(`instance ${fault.instance}`);
  if (fault.occurrence !== 1) details.push(`call ${fault.occurrence}`);
  if (details.length) parts.push(`(${details.join(', ')})`);
  return parts.join(' ');
}

export function labFacts(id: string, definition: LabDefinition, fixtures: readonly FixtureDeclaration[]): LabFacts {
  return {
    id,
    title: definition.title,
    summary: definition.summary,
    kind: definition.kind,
    cluster: definition.cluster,
    instances: definition.instances,
    faults: { full: definition.faults.full.map(describeFault), quick: definition.faults.quick.map(describeFault) },
    checks: checkCoverageRows(definition, fixtures),
    timeLimitMs: definition.timeLimitMs,
    quickTimeLimitMs: definition.quickTimeLimitMs,
    // Every lab takes a program in either client (one env contract); say where a reference solution exists.
    clients: KAFKA_CLIENTS.map((c) => {
      const reference = c === 'kafkajs' || fixtures.some((f) => f.program === `solution.${c}`);
      return `${CLIENT_INFO[c].label}${reference ? ' (reference solution)' : ''}`;
    }),
    commands: definition.commandFixtures.map((c) => ({ name: c.name, expect: c.expect })),
  };
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

/** Who proves a check can fail, as one phrase: the fixtures, or the declared reason why none can. */
export function provenBy(row: CheckCoverageRow): string {
  if (row.none !== undefined) return `coverage: 'none': ${row.none}`;
  return row.provedBy.length ? `failed by ${row.provedBy.join(', ')}` : 'NOT PROVEN: no fixture fails it';
}

/** The facts of one lab as the text `kafkaiq labs` prints. */
export function formatLabFacts(facts: LabFacts): string {
  const setup = [facts.kind, facts.cluster === 'three-nodes' ? '3-broker cluster' : 'one broker', `${facts.instances} instance${facts.instances === 1 ? '' : 's'}`];
  const lines = [
    `${facts.id}  ${facts.title}`,
    `  ${setup.join(', ')}; time limit ${seconds(facts.timeLimitMs)} (quick ${seconds(facts.quickTimeLimitMs)})`,
    `  clients: ${facts.clients.join(', ')}${facts.commands.length ? `; reference commands: ${facts.commands.map((c) => `${c.name} (must ${c.expect})`).join(', ')}` : ''}`,
    `  faults, full plan:  ${facts.faults.full.join('; ')}`,
    `  faults, quick plan: ${facts.faults.quick.join('; ')}`,
    '  checks:',
    ...facts.checks.map((row) => `    ${row.check.padEnd(30)} ${provenBy(row)}`),
  ];
  return lines.join('\n');
}
