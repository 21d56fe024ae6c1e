/**
 * The Kafka names of one attempt, in two disjoint sets:
 *  - the learner's: exactly the topics, consumer groups and transactional ids the lab gives its
 *    program (the env of scenario.ts, and the lab's `kafkaIds`), granted as LITERAL ACLs
 *    (attempt-acls.ts). Every name is spelled out: nothing is granted by prefix.
 *  - the grader's own (seeding producers, reader and monitor groups): under `kiq-grader-<random>`,
 *    a prefix no learner name can start with, so no grant ever reaches them.
 * Namespaces carry 128 random bits, never a value a client chose.
 */
import { randomBytes } from 'node:crypto';
import type { KafkaIdSpec, LabDefinition } from '../../src/shared/lab.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';

/** Every learner namespace starts with this; the grader's names never do. */
export const LEARNER_PREFIX = 'kiq-';
/** Every name the grader uses for itself starts with this. */
export const GRADER_PREFIX = 'kiq-grader-';

/** A fresh namespace: `kiq-` and 128 random bits (32 hex digits), nothing a client chose. */
export function randomNamespace(): string {
  return `${LEARNER_PREFIX}${randomBytes(16).toString('hex')}`;
}

/** A fresh prefix for the grader's own groups and transactional ids of one attempt. */
export function graderPrefix(): string {
  return `${GRADER_PREFIX}${randomBytes(16).toString('hex')}`;
}

/** The names a program's env carries for one namespace (scenario.ts env() builds the same). */
export function namespaceEnv(lab: Pick<LabDefinition, 'topics'>, namespace: string): Record<string, string> {
  return {
    GROUP_ID: `${namespace}-group`,
    TRANSACTIONAL_ID_PREFIX: `${namespace}-tx`,
    ...Object.fromEntries(lab.topics.map((t) => [t.env, `${namespace}-${t.name}`])),
  };
}

/** Slot n's TRANSACTIONAL_ID. */
export function slotTransactionalId(namespace: string, slot: number): string {
  return `${namespace}-tx-${slot}`;
}

/** The lab's extra transactional ids: declared, or one per partition of each input topic when env lists TRANSACTIONAL_ID_PREFIX. */
function transactionalIdSpecs(lab: LabDefinition): KafkaIdSpec[] {
  if (lab.kafkaIds.transactionalIds) return lab.kafkaIds.transactionalIds;
  if (!lab.env.some((e) => e.name === 'TRANSACTIONAL_ID_PREFIX')) return [];
  return lab.topics.filter((t) => t.role === 'input').map((t) => ({ name: `{TRANSACTIONAL_ID_PREFIX}-{${t.env}}-{partition}`, perPartitionOf: t.name }));
}

/** One spec's names in one namespace; a spec naming an unknown topic or env is a lab error. */
export function expandKafkaId(lab: Pick<LabDefinition, 'topics'>, spec: KafkaIdSpec, namespace: string): string[] {
  const env = namespaceEnv(lab, namespace);
  const bad = (why: string): never => {
    throw new KafkaIqError('LAB_INVALID', `kafkaIds: "${spec.name}" ${why}`);
  };
  const hasPartition = spec.name.includes('{partition}');
  if (hasPartition !== !!spec.perPartitionOf) bad('needs perPartitionOf exactly when it has {partition}');
  const name = spec.name.replace(/\{([A-Z][A-Z0-9_]*)\}/g, (_, key: string) => env[key] ?? bad(`names {${key}}, which is not a topic env of this lab, GROUP_ID or TRANSACTIONAL_ID_PREFIX`));
  if (!spec.perPartitionOf) return [name];
  const topic = lab.topics.find((t) => t.name === spec.perPartitionOf) ?? bad(`has perPartitionOf "${spec.perPartitionOf}", which is not a topic of this lab`);
  return Array.from({ length: topic.partitions }, (_, p) => name.replaceAll('{partition}', String(p)));
}

export interface LearnerNames {
  /** Every topic of the attempt's namespaces: READ, DESCRIBE. */
  topics: string[];
  /** The topics the program writes (outputs and internal ones): WRITE. */
  writeTopics: string[];
  groups: string[];
  transactionalIds: string[];
}

/**
 * Exactly the names an attempt's program may use.
 * @param namespaces the attempt's namespace, then any the program also runs in (throughput lanes)
 * @param slots how many instance slots may run (each gets TRANSACTIONAL_ID `<ns>-tx-<slot>`)
 * @param extraTopics further topics of the attempt's namespace the scenario gives the program (READ only)
 */
export function learnerNames(lab: LabDefinition, namespaces: readonly string[], slots: number, extraTopics: readonly string[] = []): LearnerNames {
  const perSlot = lab.env.some((e) => e.name === 'TRANSACTIONAL_ID');
  const txSpecs = transactionalIdSpecs(lab);
  const names: LearnerNames = { topics: [...extraTopics], writeTopics: [], groups: [], transactionalIds: [] };
  for (const ns of namespaces) {
    for (const t of lab.topics) {
      names.topics.push(`${ns}-${t.name}`);
      if (t.role !== 'input') names.writeTopics.push(`${ns}-${t.name}`);
    }
    names.groups.push(`${ns}-group`, ...lab.kafkaIds.groups.flatMap((g) => expandKafkaId(lab, g, ns)));
    if (perSlot) for (let n = 1; n <= slots; n++) names.transactionalIds.push(slotTransactionalId(ns, n));
    names.transactionalIds.push(...txSpecs.flatMap((spec) => expandKafkaId(lab, spec, ns)));
  }
  const unique = (list: string[]) => [...new Set(list)];
  const result = { topics: unique(names.topics), writeTopics: unique(names.writeTopics), groups: unique(names.groups), transactionalIds: unique(names.transactionalIds) };
  for (const name of [...result.groups, ...result.transactionalIds, ...result.topics]) {
    if (name.startsWith(GRADER_PREFIX)) throw new KafkaIqError('INTERNAL', `learner name ${name} would fall under the grader's prefix`);
  }
  return result;
}

/** Whether a group/member pair a program reported names a group of its own (the grader acts on nothing else). */
export function isLearnerGroup(names: Pick<LearnerNames, 'groups'>, groupId: string): boolean {
  return names.groups.includes(groupId);
}
