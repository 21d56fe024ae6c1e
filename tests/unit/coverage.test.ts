/**
 * The coverage rule (every check a lab lists is failed by one of its fixtures, or declared
 * coverage: 'none' with a reason), the lab facts `kafkaiq labs` and the Labs page show, and which
 * fixtures `kafkaiq check --watch` grades again for a saved file. No broker: these are
 * declarations; the lab matrix (tests/support/labs-matrix.ts) grades the fixtures and proves each fails the check it names.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { labCoverageProblems, loadLabFacts } from '../../lab-server/labs/coverage.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { scaffoldLab } from '../../lab-server/labs/scaffold.ts';
import { mergeWatchTargets, watchTargetOf } from '../../lab-server/labs/watch-lab.ts';
import { judgeFixture, type Fixture } from '../../lab-server/runner/check-labs.ts';
import { labDefinitionSchema, pipelineLabSchema, type LabDefinitionInput } from '../../src/shared/lab.ts';
import { checkCoverageRows, coverageProblems, declaredFixtures, parseExpectFail } from '../../src/shared/lab-coverage.ts';
import { describeFault, formatLabFacts, injectedClientSettings, labFacts } from '../../src/shared/lab-facts.ts';
import type { CheckName, GradeReport } from '../../src/shared/report.ts';
import { probeLabId, repositoryLabIds } from '../support/labs.ts';

const baseLab: LabDefinitionInput = {
  title: 'Test lab',
  summary: 'Copies records exactly once.',
  env: [{ name: 'KAFKA_BROKERS', description: 'brokers' }],
  topics: [{ name: 'output', env: 'KAFKA_BROKERS', partitions: 1, role: 'output', description: 'out' }],
  faults: { full: [{ kind: 'kill', at: ['after:send', 'before:commit'] }, { kind: 'zombie', instance: 2 }], quick: [{ kind: 'broker-restart' }] },
  checks: ['no-loss', 'no-duplicates', 'order-preserved'],
};
const lab = (extra: Partial<LabDefinitionInput> = {}) => labDefinitionSchema.parse({ ...baseLab, ...extra });
const broken = (name: string, expectFail: CheckName) => ({ name, expectFail });

describe('the coverage rule', () => {
  it('reads the check a broken variant names on its first line, and nothing else', () => {
    expect(parseExpectFail('// expect-fail: order-preserved\n// why\n')).toBe('order-preserved');
    expect(parseExpectFail('//expect-fail:no-loss')).toBe('no-loss');
    expect(parseExpectFail('// expect-fail: no-such-check\n')).toBeNull();
    expect(parseExpectFail('import x from "y";\n// expect-fail: no-loss\n')).toBeNull();
  });

  it('names, per check, the fixtures that declare they fail it', () => {
    const definition = lab({ commandFixtures: [{ name: 'console-pipe', command: 'true', expect: 'fail', check: 'no-duplicates' }] });
    const fixtures = declaredFixtures(definition, [broken('auto-commit', 'no-duplicates'), broken('swallowed-error', 'no-loss')]);
    expect(fixtures.map((f) => f.program)).toEqual(['solution', 'starter', 'broken/auto-commit', 'broken/swallowed-error', 'cmd/console-pipe']);
    expect(checkCoverageRows(definition, fixtures)).toEqual([
      { check: 'no-loss', provedBy: ['broken/swallowed-error'] },
      { check: 'no-duplicates', provedBy: ['broken/auto-commit', 'cmd/console-pipe'] },
      { check: 'order-preserved', provedBy: [] },
    ]);
  });

  it('rejects a check no fixture fails, naming the file to add', () => {
    const definition = lab();
    const problems = coverageProblems('demo', definition, declaredFixtures(definition, [broken('a', 'no-loss'), broken('b', 'no-duplicates')]));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^labs\/demo: no fixture fails "order-preserved"/);
    expect(problems[0]).toContain("labs/demo/broken/<mistake>.ts starting with '// expect-fail: order-preserved'");
    expect(problems[0]).toContain("coverage: 'none'");
  });

  it('does not count a passing command fixture, nor the starter, as proof', () => {
    const definition = lab({ commandFixtures: [{ name: 'reference', command: 'true', expect: 'pass' }] });
    const problems = coverageProblems('demo', definition, declaredFixtures(definition, []));
    expect(problems.map((p) => /fails "([a-z-]+)"/.exec(p)?.[1])).toEqual(['no-loss', 'no-duplicates', 'order-preserved']);
  });

  it("accepts coverage: 'none' with a reason, and shows the reason", () => {
    const reason = 'one partition and one record per transaction: nothing can reorder';
    const definition = lab({ checkCoverage: [{ check: 'order-preserved', coverage: 'none', reason }] });
    const fixtures = declaredFixtures(definition, [broken('a', 'no-loss'), broken('b', 'no-duplicates')]);
    expect(coverageProblems('demo', definition, fixtures)).toEqual([]);
    expect(checkCoverageRows(definition, fixtures)[2]).toEqual({ check: 'order-preserved', provedBy: [], none: reason });
  });

  it("rejects a stale coverage: 'none', one for a check the lab does not list, and one named twice", () => {
    const none = (check: CheckName) => ({ check, coverage: 'none' as const, reason: 'cannot fail here, really' });
    const definition = lab({ checkCoverage: [none('no-loss'), none('atomic-fan-out'), none('order-preserved'), none('order-preserved')] });
    const problems = coverageProblems('demo', definition, declaredFixtures(definition, [broken('a', 'no-loss'), broken('b', 'no-duplicates')]));
    expect(problems).toEqual([
      'labs/demo/lab.ts: checkCoverage names "atomic-fan-out", which is not in checks',
      'labs/demo/lab.ts: checkCoverage names "order-preserved" twice',
      `labs/demo/lab.ts: "no-loss" is declared coverage: 'none' but broken/a fails it: remove the checkCoverage entry`,
    ]);
  });

  it('wants a one-line reason and nothing but check, coverage and reason', () => {
    const parse = (entry: unknown) => labDefinitionSchema.safeParse({ ...baseLab, checkCoverage: [entry] }).success;
    expect(parse({ check: 'no-loss', coverage: 'none', reason: 'a reason of some length' })).toBe(true);
    expect(parse({ check: 'no-loss', coverage: 'none', reason: 'first line\nsecond line' })).toBe(false);
    expect(parse({ check: 'no-loss', coverage: 'none' })).toBe(false);
    expect(parse({ check: 'no-loss', coverage: 'some', reason: 'a reason of some length' })).toBe(false);
    expect(parse({ check: 'no-loss', coverage: 'none', reason: 'a reason of some length', fixture: 'x' })).toBe(false);
  });

  it('holds for a lab scaffolded by kafkaiq new, before its author changes anything', async () => {
    const id = probeLabId('coverage-probe');
    const dir = scaffoldLab(id);
    try {
      expect(await labCoverageProblems([id])).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('holds for every lab in labs/ (CI: a lab cannot land with a check nothing proves able to fail)', async () => {
    expect(await labCoverageProblems(repositoryLabIds())).toEqual([]);
  });
});

describe('judging a fixture', () => {
  const report = (failed: CheckName[], verdict: GradeReport['verdict'] = failed.length ? 'fail' : 'pass') =>
    ({
      verdict,
      checks: (['no-loss', 'no-duplicates', 'order-preserved'] as CheckName[]).map((name) => ({ name, passed: !failed.includes(name), summary: '', evidence: [] })),
    }) as unknown as GradeReport;
  const fixture = (check?: CheckName): Fixture => ({ lab: 'demo', program: 'broken/x', input: { kind: 'code', code: '' }, expect: 'fail', check });

  it('wants a broken variant to fail the check it names, not merely something', () => {
    expect(judgeFixture(fixture('order-preserved'), report(['order-preserved', 'no-loss'])).ok).toBe(true);
    expect(judgeFixture(fixture('order-preserved'), report(['no-loss']))).toEqual({ ok: false, got: 'fail (no-loss)' });
    expect(judgeFixture(fixture('order-preserved'), report(['order-preserved'], 'inconclusive')).ok).toBe(false);
    expect(judgeFixture(fixture(), report(['no-duplicates'])).ok).toBe(true);
  });
});

describe('the lab facts', () => {
  it('describe each fault by its kind, crash points, stage, instance and occurrence', () => {
    const [kill, zombie] = lab().faults.full;
    expect(describeFault(kill!)).toBe('kill at after:send | before:commit');
    expect(describeFault(zombie!)).toBe('zombie (instance 2)');
    const aimed = pipelineLabSchema.shape.faults.parse({ full: [{ kind: 'kill', at: ['after:commit'], topic: 'enriched', occurrence: 2 }], quick: [{ kind: 'join' }] });
    expect(describeFault(aimed.full[0]!)).toBe('kill at after:commit (stage writing enriched, call 2)');
  });

  it('print every check with the fixtures that fail it, and the reason of a check none can', () => {
    const reason = 'one partition and one record per transaction: nothing can reorder';
    const definition = lab({ checkCoverage: [{ check: 'order-preserved', coverage: 'none', reason }], timeLimitMs: 120_000, quickTimeLimitMs: 45_000 });
    const text = formatLabFacts(labFacts('demo', definition, declaredFixtures(definition, [broken('auto-commit', 'no-duplicates')])));
    expect(text).toContain('pipeline, one broker, 1 instance; time limit 120 s (quick 45 s)');
    expect(text).toContain('clients: kafkajs 2.2.4 (reference solution), @platformatic/kafka 2.12.1');
    expect(text).toContain('faults, full plan:  kill at after:send | before:commit; zombie (instance 2)');
    expect(text).toContain('faults, quick plan: broker-restart');
    expect(text).toMatch(/no-loss +NOT PROVEN: no fixture fails it/);
    expect(text).toMatch(/no-duplicates +failed by broken\/auto-commit/);
    expect(text).toMatch(new RegExp(`order-preserved +coverage: 'none': ${reason}`));
  });

  it('list every client setting the lab injects, with its value and the client default', () => {
    const definition = lab({
      kafkajs: {
        consumer: { sessionTimeout: 3_000, maxWaitTimeInMs: 100 },
        producer: { transactionTimeout: 30_000 },
        client: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 10 } },
      },
    });
    const rows = injectedClientSettings(definition.kafkajs);
    const row = (option: string) => rows.find((r) => r.kafkajs === option);
    expect(row('new Kafka({ retry: { retries } })')).toMatchObject({ value: '10', kafkajsDefault: '5', platformatic: { option: 'retries', clientDefault: '3' } });
    expect(row('new Kafka({ retry: { initialRetryTime } })')).toMatchObject({ value: '100 ms', kafkajsDefault: '300 ms', platformatic: { option: 'retryDelay' } });
    expect(row('new Kafka({ retry: { maxRetryTime } })')).toMatchObject({ value: '1 s', kafkajsDefault: '30 s', platformatic: null });
    expect(row('kafka.consumer({ sessionTimeout })')).toMatchObject({ value: '3 s', kafkajsDefault: '30 s' });
    expect(row('kafka.consumer({ maxWaitTimeInMs })')).toMatchObject({ value: '100 ms', platformatic: { option: 'maxWaitTime' } });
    expect(row('kafka.producer({ transactionTimeout })')).toMatchObject({ value: '30 s', kafkajsDefault: '60 s' });
    // What the wrappers add in every lab, set or not in lab.ts.
    expect(row('new Kafka({ logLevel, logCreator })')).toMatchObject({ value: 'WARN' });
    expect(row('new Kafka({ sasl })')).toBeDefined();
    // Nothing the lab leaves out is listed.
    expect(row('kafka.consumer({ heartbeatInterval })')).toBeUndefined();
    expect(formatLabFacts(labFacts('demo', definition, []))).toContain('new Kafka({ retry: { retries } })');
    expect(injectedClientSettings(lab().kafkajs).map((r) => r.kafkajs)).toEqual(['new Kafka({ logLevel, logCreator })', 'new Kafka({ sasl })']);
  });

  it('of a real lab name its broken variants and its reference command', async () => {
    const facts = await loadLabFacts('copy');
    expect(facts.checks.find((c) => c.check === 'no-aborted-reads')?.provedBy).toEqual(
      expect.arrayContaining(['broken/read-uncommitted', 'cmd/console-consumer-to-console-producer']),
    );
    expect(facts.commands).toContainEqual({ name: 'transactional-message-copier', expect: 'pass' });
    expect(facts.faults.quick.length).toBe((await loadLab('copy')).definition.faults.quick.length);
  });
});

describe('kafkaiq check --watch', () => {
  it('grades again only the fixture whose file was saved', () => {
    expect(watchTargetOf('solution.ts')).toEqual({ kind: 'fixtures', programs: ['solution'] });
    expect(watchTargetOf('starter.ts')).toEqual({ kind: 'fixtures', programs: ['starter'] });
    expect(watchTargetOf('broken/groups-by-key.ts')).toEqual({ kind: 'fixtures', programs: ['broken/groups-by-key'] });
    expect(watchTargetOf('broken\\groups-by-key.ts')).toEqual({ kind: 'fixtures', programs: ['broken/groups-by-key'] });
  });

  it('grades the whole lab when lab.ts or another module of the folder changes', () => {
    expect(watchTargetOf('lab.ts')).toEqual({ kind: 'lab' });
    expect(watchTargetOf('baseline.ts')).toEqual({ kind: 'lab' });
    expect(watchTargetOf('helpers/values.ts')).toEqual({ kind: 'lab' });
  });

  it('ignores hints, notes and the temporary files editors save through', () => {
    for (const file of ['hints.md', 'broken', 'broken/.groups-by-key.ts.swp', '.#lab.ts', 'lab.ts~', '4913', 'broken/x.ts.tmp']) {
      expect(watchTargetOf(file), file).toEqual({ kind: 'none' });
    }
  });

  it('merges the changes of one debounce window', () => {
    const variant = watchTargetOf('broken/a.ts');
    expect(mergeWatchTargets([variant, watchTargetOf('solution.ts'), variant])).toEqual({ kind: 'fixtures', programs: ['broken/a', 'solution'] });
    expect(mergeWatchTargets([variant, watchTargetOf('lab.ts')])).toEqual({ kind: 'lab' });
    expect(mergeWatchTargets([watchTargetOf('hints.md')])).toEqual({ kind: 'none' });
  });
});
