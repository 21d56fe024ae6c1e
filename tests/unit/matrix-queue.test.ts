import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, MachineLoad, MATRIX_CONCURRENCY, MatrixQueueClient, nextClaim, serveMatrixQueue, type QueueEntry } from '../support/matrix-queue.ts';

const entries: QueueEntry[] = [
  { key: 'failover solution', owner: 1, pinned: true },
  { key: 'db-sink solution', owner: 2, pinned: true },
  { key: 'copy solution', owner: 1, pinned: false },
  { key: 'zombie starter', owner: 2, pinned: false },
];

const result = (lab: string, program: string) => ({ lab, program, expected: 'pass', got: 'pass', ok: true, seconds: 1, aimed: { faults: 0, atPoint: 0 } });

describe('the lab matrix queue', () => {
  it('gives a shard its own fixtures and the unpinned ones of others, in order, never a fixture twice', () => {
    const taken = new Set<string>();
    const take = (shard: number) => {
      const entry = nextClaim(entries, taken, shard);
      if (entry) taken.add(entry.key);
      return entry?.key;
    };
    expect(take(2)).toBe('db-sink solution');
    // Shard 2 may take shard 1's unpinned fixture, never its pinned one.
    expect(take(2)).toBe('copy solution');
    expect(take(2)).toBe('zombie starter');
    expect(take(2)).toBeUndefined();
    expect(take(1)).toBe('failover solution');
    expect(take(1)).toBeUndefined();
  });

  describe('served over HTTP', () => {
    let served: Awaited<ReturnType<typeof serveMatrixQueue>>;
    beforeAll(async () => {
      served = await serveMatrixQueue();
    });
    afterAll(() => served.close());

    it('refuses a shard whose fixture list differs from the first one registered', async () => {
      const one = new MatrixQueueClient(served.url, 1);
      const two = new MatrixQueueClient(served.url, 2);
      await one.register(entries);
      await expect(two.register(entries.slice(1))).rejects.toThrow(/listed different fixtures/);
      await expect(two.register(entries)).resolves.toBeDefined();
    });

    it('collects a shard’s results wherever they were graded, and names those that never came', async () => {
      const one = new MatrixQueueClient(served.url, 1);
      const two = new MatrixQueueClient(served.url, 2);
      const claimed: string[] = [];
      for (let key = await two.claim(); key; key = await two.claim()) claimed.push(key);
      expect(claimed).toEqual(['db-sink solution', 'copy solution', 'zombie starter']);
      await two.report('copy solution', result('copy', 'solution'));
      await expect(one.collect(['copy solution', 'failover solution'], 0)).rejects.toThrow(/never received the results of: failover solution$/);
      expect(await one.claim()).toBe('failover solution');
      await one.report('failover solution', result('failover', 'solution'));
      const collected = await one.collect(['copy solution', 'failover solution'], 0);
      expect(collected.map((r) => `${r.lab} ${r.program}`)).toEqual(['copy solution', 'failover solution']);
    });

    it('answers a malformed request with 400, and stays up', async () => {
      const bad = await fetch(`${served.url}/claim`, { method: 'POST', body: '{"shard": "one"}' });
      expect(bad.status).toBe(400);
      const notJson = await fetch(`${served.url}/result`, { method: 'POST', body: 'not json' });
      expect(notJson.status).toBe(400);
      expect(await new MatrixQueueClient(served.url, 2).claim()).toBeUndefined();
    });
  });

  it('runs each shard at its floor whatever the load, and above it only while the machine has room, one extra grade at a time', () => {
    const { floorPerShard: floor, ceilingPerShard: ceiling, admissionGapMs: gap } = MATRIX_CONCURRENCY;
    expect(admit({ activeOfShard: floor - 1, busyPercent: 100, msSinceLastExtra: 0 })).toBe(true);
    expect(admit({ activeOfShard: floor, busyPercent: 100, msSinceLastExtra: gap })).toBe(false);
    expect(admit({ activeOfShard: floor, busyPercent: 50, msSinceLastExtra: gap })).toBe(true);
    expect(admit({ activeOfShard: floor, busyPercent: 50, msSinceLastExtra: gap - 1 })).toBe(false);
    expect(admit({ activeOfShard: ceiling, busyPercent: 0, msSinceLastExtra: gap })).toBe(false);
    // Where the load cannot be read, the floor only.
    expect(admit({ activeOfShard: floor, busyPercent: null, msSinceLastExtra: gap })).toBe(false);
  });

  it('reads the machine as busy while a core spins', async () => {
    const load = new MachineLoad(2);
    try {
      const until = Date.now() + 2_500;
      while (Date.now() < until) {
        // spin: one core of this process busy
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      const busy = load.busyPercent();
      expect(busy).not.toBeNull();
      // One spinning core of however many: at least its share, less whatever idled while sampling.
      expect(busy!).toBeGreaterThan(100 / (await import('node:os')).availableParallelism() / 2);
    } finally {
      load.close();
    }
  });

  it('tells a shard over its floor to wait while the machine is busy, and admits it once there is room', async () => {
    let busy = 95;
    const served = await serveMatrixQueue({ busyPercent: () => busy });
    try {
      const many: QueueEntry[] = Array.from({ length: 8 }, (_, i) => ({ key: `copy broken/${i}`, owner: 1, pinned: false }));
      const one = new MatrixQueueClient(served.url, 1);
      await one.register(many);
      const claimRaw = async (claimId: string = randomUUID()) => (await (await fetch(`${served.url}/claim`, { method: 'POST', body: JSON.stringify({ shard: 1, claimId }) })).json()) as { key: string | null; wait?: boolean };
      const first = randomUUID();
      expect((await claimRaw(first)).key).toBe('copy broken/0');
      // The same claim tried again (its answer lost on the way): the same fixture, not another.
      expect((await claimRaw(first)).key).toBe('copy broken/0');
      for (let i = 1; i < MATRIX_CONCURRENCY.floorPerShard; i++) expect((await claimRaw()).key).toBe(`copy broken/${i}`);
      expect(await claimRaw()).toEqual({ key: null, wait: true });
      // Another shard's floor is its own.
      expect((await new MatrixQueueClient(served.url, 2).claim())).toBe(`copy broken/${MATRIX_CONCURRENCY.floorPerShard}`);
      // A result frees a place under the floor.
      await one.report('copy broken/0', result('copy', 'broken/0'));
      expect((await claimRaw()).key).toBe(`copy broken/${MATRIX_CONCURRENCY.floorPerShard + 1}`);
      // Room on the machine: one more above the floor, then the gap before the next.
      busy = 40;
      expect((await claimRaw()).key).toBe(`copy broken/${MATRIX_CONCURRENCY.floorPerShard + 2}`);
      expect(await claimRaw()).toEqual({ key: null, wait: true });
    } finally {
      await served.close();
    }
  });

  it('tries a request again when its connection is reset, and the shard gets its fixture once', async () => {
    const served = await serveMatrixQueue({ busyPercent: () => 100 });
    // In front of the queue: the first connection is reset as soon as it sends; the rest pass.
    let resets = 0;
    const front = net.createServer((inside) => {
      if (resets++ === 0) {
        inside.once('data', () => inside.resetAndDestroy());
        return;
      }
      const outside = net.connect(Number(new URL(served.url).port), '127.0.0.1');
      inside.pipe(outside).pipe(inside);
      const end = () => (inside.destroy(), outside.destroy());
      inside.on('error', end).on('close', end);
      outside.on('error', end).on('close', end);
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(front.address() as net.AddressInfo).port}`;
      const one = new MatrixQueueClient(url, 1);
      await one.register(entries);
      expect(resets).toBeGreaterThanOrEqual(2);
      expect(await one.claim()).toBe('failover solution');
      expect(await one.claim()).toBe('copy solution');
    } finally {
      front.close();
      await served.close();
    }
  });
});
