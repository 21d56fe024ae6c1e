/**
 * `kafkaiq new` is green by construction, as an instructor uses it: a lab scaffolded into labs/
 * (removed afterwards) whose author changes only its transform (the value becomes `key:value`) in
 * lab.ts, the solution and the starter passes `kafkaiq check` in both plans on the real broker:
 * the solution passes, the starter fails, and every broken variant fails its named check. The
 * variants were not touched: each mistake (broken/<name>.diff) is made to the new solution.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadLab } from '../lab-server/labs/load-lab.ts';
import { scaffoldLab } from '../lab-server/labs/scaffold.ts';
import { fixturePlan, labFixtures, runFixtures } from '../lab-server/runner/check-labs.ts';
import { useGradingCluster } from './support/kafka.ts';
import { probeLabId } from './support/labs.ts';

const cluster = useGradingCluster();
const id = probeLabId('key-tagger');
let dir: string | null = null;

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Replaces `from` (which must occur exactly once) in the lab's file. */
function edit(file: string, from: string, to: string): void {
  const full = path.join(dir!, file);
  const text = fs.readFileSync(full, 'utf8');
  expect(text.split(from).length - 1, `${file} holds the transform once: ${from}`).toBe(1);
  fs.writeFileSync(full, text.replace(from, to));
}

describe('a scaffolded lab whose author changed only the transform', () => {
  it('passes kafkaiq check in both plans, its variants untouched', async () => {
    dir = scaffoldLab(id);
    const variantsBefore = fs.readdirSync(path.join(dir, 'broken')).map((f) => fs.readFileSync(path.join(dir!, 'broken', f), 'utf8'));
    edit('lab.ts', "transform: (input) => [{ topic: 'output', key: input.key, value: input.value }],", "transform: (input) => [{ topic: 'output', key: input.key, value: `${input.key}:${input.value}` }],");
    edit('solution.ts', 'const outputOf = (m: KafkaMessage) => ({ key: m.key, value: m.value, headers: m.headers });', 'const outputOf = (m: KafkaMessage) => ({ key: m.key, value: `${m.key}:${m.value}`, headers: m.headers });');
    edit('starter.ts', 'messages: [{ key: message.key, value: message.value }]', 'messages: [{ key: message.key, value: `${message.key}:${message.value}` }]');

    const lab = await loadLab(id);
    expect(lab.broken.length, 'the scaffold has broken variants').toBeGreaterThanOrEqual(5);
    // The mistakes follow the new solution: each program as graded carries the new transform.
    for (const variant of lab.broken.filter((b) => b.base)) expect(variant.source, variant.name).toContain('value: `${m.key}:${m.value}`');
    expect(fs.readdirSync(path.join(dir, 'broken')).map((f) => fs.readFileSync(path.join(dir!, 'broken', f), 'utf8'))).toEqual(variantsBefore);

    // `kafkaiq check` grades every fixture; `kafkaiq check --quick` grades again only what it
    // moves to another plan: the programs that must pass (a program that must fail takes the same
    // plan either way, so grading it twice would only add a seed).
    const fixtures = await labFixtures([id]);
    expect(fixtures.map((f) => f.program)).toEqual(expect.arrayContaining(['solution', 'starter', ...lab.broken.map((b) => `broken/${b.name}`)]));
    const movedByQuick = fixtures.filter((f) => fixturePlan(f, true) !== fixturePlan(f, false));
    expect(movedByQuick.map((f) => f.program)).toEqual(fixtures.filter((f) => f.expect === 'pass').map((f) => f.program));
    expect(movedByQuick.map((f) => f.program)).toContain('solution');
    for (const [plan, graded] of [['full', fixtures], ['quick', movedByQuick]] as const) {
      const results = await runFixtures(graded, cluster(), { quick: plan === 'quick', parallel: 3 });
      const wrong = results.filter((r) => !r.ok).map((r) => `${r.program}: expected ${r.expected}, got ${r.got}`);
      expect(wrong, `kafkaiq check${plan === 'quick' ? ' --quick' : ''}`).toEqual([]);
      expect(results.map((r) => r.program).sort()).toEqual(graded.map((f) => f.program).sort());
    }
  }, 900_000);
});
