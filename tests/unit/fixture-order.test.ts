// The order `kafkaiq check` and the lab matrix grade fixtures in (fixtureRank): slowest first.
import { describe, expect, it } from 'vitest';
import { fixtureRank, type Fixture } from '../../lab-server/runner/check-labs.ts';

type Ranked = Pick<Fixture, 'program' | 'threeNodes' | 'expect' | 'check'>;

const inOrder = (fixtures: Ranked[]) => [...fixtures].sort((a, b) => fixtureRank(a) - fixtureRank(b)).map((f) => f.program);

describe('the order fixtures are graded in', () => {
  it('takes the 3-node cluster first, then, in each, programs that must pass, those that must fail by stalling, the rest', () => {
    const fixtures: Ranked[] = [
      { program: 'broken/off-by-one-offsets', expect: 'fail', check: 'offsets-consistent' },
      { program: 'starter', expect: 'fail' },
      { program: 'broken/commits-when-full', expect: 'fail', check: 'no-hanging-transactions' },
      { program: 'solution', expect: 'pass' },
      { program: 'broken/never-aborts-failed-send', expect: 'fail', check: 'keeps-up' },
      { program: 'failover/broken', expect: 'fail', check: 'no-loss', threeNodes: true },
      { program: 'failover/broken-stalls', expect: 'fail', check: 'keeps-up', threeNodes: true },
      { program: 'failover/solution', expect: 'pass', threeNodes: true },
    ];
    expect(inOrder(fixtures)).toEqual([
      'failover/solution',
      'failover/broken-stalls',
      'failover/broken',
      'solution',
      'broken/commits-when-full',
      'broken/never-aborts-failed-send',
      'broken/off-by-one-offsets',
      'starter',
    ]);
  });
});
