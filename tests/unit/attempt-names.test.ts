/**
 * An attempt's Kafka names: exactly the lab's, granted one by one (LITERAL), disjoint from the
 * grader's own; namespaces of 128 random bits; and the grader's LeaveGroups only for the
 * attempt's own groups, deduplicated and bounded.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { MaintenanceLock } from '../../lab-server/broker/maintenance.ts';
import { kafkajs } from '../../lab-server/kafka/client.ts';
import { attemptAcls } from '../../lab-server/kafka/attempt-acls.ts';
import { GRADER_PREFIX, graderPrefix, learnerNames, randomNamespace } from '../../lab-server/kafka/attempt-names.ts';
import { GroupEvictor, MAX_PAIRS } from '../../lab-server/kafka/group-evictor.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { repositoryLabIds } from '../support/labs.ts';

const { AclResourceTypes, AclOperationTypes, ResourcePatternTypes } = kafkajs;

describe('namespaces', () => {
  it('carry 128 random bits and nothing a client chose', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const ns = randomNamespace();
      expect(ns).toMatch(/^kiq-[0-9a-f]{32}$/);
      seen.add(ns);
    }
    expect(seen.size).toBe(2_000);
    // Every hex digit position varies: the 32 digits are all random, none fixed or derived.
    const samples = [...seen];
    for (let pos = 4; pos < 36; pos++) expect(new Set(samples.map((s) => s[pos])).size).toBeGreaterThan(8);
  });

  it("never fall under the grader's prefix", () => {
    for (let i = 0; i < 200; i++) {
      expect(randomNamespace().startsWith(GRADER_PREFIX)).toBe(false);
      expect(graderPrefix().startsWith(GRADER_PREFIX)).toBe(true);
    }
  });
});

describe('learner names', () => {
  it('are exact per lab: the zombie lab gets its group, a TRANSACTIONAL_ID per slot and one id per input partition', async () => {
    const lab = (await loadLab('zombie')).definition;
    const names = learnerNames(lab, ['kiq-a'], 3);
    expect(names.groups).toEqual(['kiq-a-group']);
    expect(names.transactionalIds).toEqual([
      'kiq-a-tx-1',
      'kiq-a-tx-2',
      'kiq-a-tx-3',
      ...Array.from({ length: 6 }, (_, p) => `kiq-a-tx-kiq-a-input-${p}`),
    ]);
    expect(names.topics).toEqual(['kiq-a-input', 'kiq-a-output']);
    expect(names.writeTopics).toEqual(['kiq-a-output']);
  });

  it('follow what multi-stage and case-study declare (kafkaIds)', async () => {
    const multi = learnerNames((await loadLab('multi-stage')).definition, ['kiq-m'], 1);
    expect(multi.groups).toEqual(['kiq-m-group', 'kiq-m-group-enrich', 'kiq-m-group-aggregate', 'kiq-m-group-aggregate-restore-0', 'kiq-m-group-aggregate-restore-1', 'kiq-m-group-aggregate-restore-2']);
    expect(multi.transactionalIds).toContain('kiq-m-group-enrich-kiq-m-filtered-2');
    const caseStudy = learnerNames((await loadLab('case-study')).definition, ['kiq-c'], 1);
    expect(caseStudy.groups).toEqual(['kiq-c-group', 'kiq-c-group-sender', 'kiq-c-group-restore']);
    expect(caseStudy.transactionalIds).toEqual(['kiq-c-tx-1']);
  });

  it('are few, inside the namespace and never a grader name, for every lab', async () => {
    for (const id of repositoryLabIds()) {
      const lab = (await loadLab(id)).definition;
      const names = learnerNames(lab, ['kiq-x', 'kiq-x-base', 'kiq-x-speed'], 6);
      const all = [...names.topics, ...names.groups, ...names.transactionalIds];
      for (const name of all) {
        expect(name.startsWith('kiq-x-'), `${id}: ${name}`).toBe(true);
        expect(name.startsWith(GRADER_PREFIX), `${id}: ${name}`).toBe(false);
      }
      expect(names.groups.length + names.transactionalIds.length, id).toBeLessThanOrEqual(3 * (8 * 12 + 8 * 12 + 6 + 1));
    }
  });
});

describe('attempt ACLs', () => {
  it('are LITERAL, one binding per name the lab gives, and reach no grader name', async () => {
    const lab = (await loadLab('single-stage')).definition;
    const grader = graderPrefix();
    const names = learnerNames(lab, ['kiq-s'], 1);
    const acls = attemptAcls('attempt-user', { namespace: 'kiq-s', ...names, expiresAtMs: Date.now() + 60_000 });
    expect(acls.every((a) => a.resourcePatternType === ResourcePatternTypes.LITERAL)).toBe(true);
    const bindings = acls.map((a) => `${a.resourceType}:${a.resourceName}:${a.operation}`).sort();
    const { TOPIC, GROUP, TRANSACTIONAL_ID, CLUSTER } = AclResourceTypes;
    const { READ, WRITE, DESCRIBE, IDEMPOTENT_WRITE } = AclOperationTypes;
    expect(bindings).toEqual(
      [
        `${TOPIC}:kiq-s-input:${READ}`,
        `${TOPIC}:kiq-s-input:${DESCRIBE}`,
        `${TOPIC}:kiq-s-output:${READ}`,
        `${TOPIC}:kiq-s-output:${DESCRIBE}`,
        `${TOPIC}:kiq-s-output:${WRITE}`,
        `${GROUP}:kiq-s-group:${READ}`,
        `${TRANSACTIONAL_ID}:kiq-s-tx-1:${WRITE}`,
        `${TRANSACTIONAL_ID}:kiq-s-tx-1:${DESCRIBE}`,
        // The lesson's one producer per input partition (the lab's kafkaIds).
        ...[0, 1, 2].flatMap((p) => [`${TRANSACTIONAL_ID}:kiq-s-group-kiq-s-input-${p}:${WRITE}`, `${TRANSACTIONAL_ID}:kiq-s-group-kiq-s-input-${p}:${DESCRIBE}`]),
        `${CLUSTER}:kafka-cluster:${IDEMPOTENT_WRITE}`,
      ].sort(),
    );
    // The grader's names in that attempt: its seeders, readers and monitor.
    for (const name of [`${grader}-seeder`, `${grader}-seeder-held-1`, `${grader}-txn-log-reader`, `${grader}-monitor`, `${grader}-speed-seeder`]) {
      expect(acls.some((a) => a.resourceName === name)).toBe(false);
    }
  });

  it('refuse a name outside the namespace or under the grader prefix', () => {
    const base = { namespace: 'kiq-s', topics: ['kiq-s-input'], writeTopics: [], groups: [] as string[], transactionalIds: [] as string[], expiresAtMs: 0 };
    expect(() => attemptAcls('u', { ...base, groups: ['kiq-other-group'] })).toThrow(/outside/);
    expect(() => attemptAcls('u', { ...base, namespace: 'kiq-grader-1', topics: ['kiq-grader-1-input'] })).toThrow(/outside/);
  });
});

describe('the group evictor', () => {
  it('takes only owned groups, each pair once, at most MAX_PAIRS, from a flood of 3,000', () => {
    const evictor = new GroupEvictor(['127.0.0.1:1'], (g) => g === 'kiq-a-group' || g === 'kiq-a-group-sender', new MaintenanceLock());
    const flood: [string, string][] = [];
    for (let i = 0; i < 3_000; i++) flood.push([i % 2 ? `kiq-victim-group` : `foreign-${i}`, `m-${i}`]);
    expect(evictor.select(flood)).toEqual([]);
    const own: [string, string][] = [['kiq-a-group', 'm1'], ['kiq-a-group', 'm1'], ...flood, ['kiq-a-group-sender', 'm2']];
    expect(evictor.select(own)).toEqual([['kiq-a-group', 'm1'], ['kiq-a-group-sender', 'm2']]);
    const many = Array.from({ length: 100 }, (_, i) => ['kiq-a-group', `m${i}`] as [string, string]);
    expect(evictor.select(many)).toHaveLength(MAX_PAIRS);
  });

  it('sends during a broker restart once the restart has ended, without holding the caller up', async () => {
    const maintenance = new MaintenanceLock();
    let endRestart: () => void = () => {};
    const restart = maintenance.withExclusive(() => new Promise<void>((resolve) => (endRestart = resolve)));
    await expect.poll(() => maintenance.isDown).toBe(true);
    const sharedAt: number[] = [];
    const watched = { get isDown() { return maintenance.isDown; }, withShared: <T,>(fn: () => Promise<T>) => maintenance.withShared(() => (sharedAt.push(Date.now()), fn())) };
    const evictor = new GroupEvictor(['127.0.0.1:1'], (g) => g === 'kiq-a-group', watched);
    const began = Date.now();
    await evictor.leave([['kiq-a-group', 'm1']], 3_000);
    expect(Date.now() - began, 'returned at once').toBeLessThan(200);
    await sleep(300);
    expect(sharedAt, 'nothing sent while the broker is down').toEqual([]);
    const endedAt = Date.now();
    endRestart();
    await restart;
    await expect.poll(() => sharedAt.length).toBeGreaterThan(0);
    expect(sharedAt).toHaveLength(1);
    expect(sharedAt[0]!).toBeGreaterThanOrEqual(endedAt);
    await evictor.close();
  });
});
