/**
 * The fault plan of a grade (lab-server/runner/fault-plan.ts): the same for the same seed, every
 * listed fault once at an allowed crash point, and the orderings that keep later faults aimable.
 */
import { describe, expect, it } from 'vitest';
import { planFaults, UNANNOUNCED_WINDOW_MS } from '../../lab-server/runner/fault-plan.ts';

describe('fault plans', () => {
  const specs = [
    { kind: 'kill' as const, at: ['after:send' as const, 'before:commit' as const], instance: 1, occurrence: 1 },
    { kind: 'kill' as const, at: ['after:commit' as const], instance: 1, occurrence: 1 },
    { kind: 'zombie' as const, at: ['after:send' as const], instance: 1, occurrence: 1 },
    { kind: 'broker-restart' as const, at: [], instance: 1, occurrence: 1 },
  ];

  it('replays the same plan for the same seed and differs across seeds', () => {
    expect(planFaults(specs, 42)).toEqual(planFaults(specs, 42));
    const orders = new Set(Array.from({ length: 20 }, (_, seed) => planFaults(specs, seed).faults.map((f) => `${f.kind}@${f.crashPoint}`).join(',')));
    expect(orders.size).toBeGreaterThan(3);
  });

  it('fires every listed fault once, only at allowed crash points, and never starts with a broker restart', () => {
    for (let seed = 0; seed < 50; seed++) {
      const plan = planFaults(specs, seed);
      expect(plan.faults.map((f) => f.kind).sort()).toEqual(['broker-restart', 'kill', 'kill', 'zombie']);
      expect(plan.faults[0]!.kind).not.toBe('broker-restart');
      for (const f of plan.faults) {
        const spec = specs.find((s) => s.kind === f.kind && (s.at.length === 0 || s.at.includes(f.crashPoint as never)));
        expect(spec, `${f.kind} at ${f.crashPoint}`).toBeDefined();
      }
    }
  });

  it('puts coordinator kills last, so no later program kill restarts a program they left stuck', () => {
    const withCoordinator = [
      { kind: 'coordinator-kill' as const, at: ['before:commit' as const], instance: 1, occurrence: 1 },
      ...specs,
      { kind: 'coordinator-kill' as const, at: ['after:send' as const], instance: 1, occurrence: 1 },
    ];
    const orders = new Set<string>();
    for (let seed = 0; seed < 50; seed++) {
      const kinds = planFaults(withCoordinator, seed).faults.map((f) => f.kind);
      expect(kinds.slice(-2)).toEqual(['coordinator-kill', 'coordinator-kill']);
      expect(kinds[0]).not.toBe('broker-restart');
      orders.add(planFaults(withCoordinator, seed).faults.map((f) => `${f.kind}@${f.crashPoint}`).join(','));
    }
    expect(orders.size).toBeGreaterThan(3);
  });
});

describe('fault plans of a one-instance lab with a join', () => {
  it('puts the join last, so no later fault aims at an instance that may own no partition of its wave', () => {
    const specs = [
      { kind: 'kill' as const, at: ['after:db-write' as const], instance: 1, occurrence: 1 },
      { kind: 'join' as const, at: [], instance: 1, occurrence: 1 },
      { kind: 'kill' as const, at: ['after:db-commit' as const], instance: 1, occurrence: 1 },
    ];
    for (let seed = 0; seed < 30; seed++) expect(planFaults(specs, seed, { joinsLast: true }).faults.at(-1)!.kind).toBe('join');
    const anywhere = new Set(Array.from({ length: 30 }, (_, seed) => planFaults(specs, seed).faults.findIndex((f) => f.kind === 'join')));
    expect(anywhere.size).toBeGreaterThan(1);
  });
});

describe("a plan's unannounced kill", () => {
  const specs = [
    { kind: 'kill' as const, at: ['after:send' as const, 'before:commit' as const], instance: 1, occurrence: 1 },
    { kind: 'zombie' as const, at: ['after:send' as const], instance: 2, occurrence: 1 },
    { kind: 'broker-restart' as const, at: [], instance: 1, occurrence: 1 },
    { kind: 'coordinator-kill' as const, at: ['before:commit' as const], instance: 1, occurrence: 1 },
  ];
  const strip = ({ ordinal: _ordinal, ...fault }: { ordinal?: number }) => fault;

  it('is one kill at a seeded moment, aimed at no point, of a seeded instance, somewhere before the faults that go last', () => {
    const places = new Set<number>();
    const instances = new Set<number>();
    for (let seed = 0; seed < 60; seed++) {
      const plan = planFaults(specs, seed, { instances: 2 });
      const unannounced = plan.faults.filter((f) => f.unannounced);
      expect(unannounced).toHaveLength(1);
      const kill = unannounced[0]!;
      expect(kill).toMatchObject({ kind: 'kill', points: [] });
      expect(kill.crashPoint).toBeUndefined();
      expect(kill.delayMs).toBeGreaterThanOrEqual(0);
      expect(kill.delayMs).toBeLessThan(UNANNOUNCED_WINDOW_MS);
      expect(plan.faults.at(-1)!.kind).toBe('coordinator-kill');
      places.add(plan.faults.indexOf(kill));
      instances.add(kill.instance);
      expect(plan.faults.map((f) => f.ordinal)).toEqual(plan.faults.map((_, i) => i + 1));
    }
    expect(places.size).toBeGreaterThan(2);
    expect([...instances].sort()).toEqual([1, 2]);
  });

  it("leaves the listed faults' plan of a seed as it is without it", () => {
    for (let seed = 0; seed < 30; seed++) {
      const without = planFaults(specs, seed).faults.map(strip);
      const listed = planFaults(specs, seed, { instances: 1 }).faults.filter((f) => !f.unannounced).map(strip);
      expect(listed).toEqual(without);
    }
  });

  it('is in no plan that did not ask for it', () => {
    for (let seed = 0; seed < 30; seed++) expect(planFaults(specs, seed).faults.some((f) => f.unannounced)).toBe(false);
  });
});
