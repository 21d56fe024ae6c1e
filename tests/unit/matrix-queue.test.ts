import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MatrixQueueClient, nextClaim, serveMatrixQueue, type QueueEntry } from '../support/matrix-queue.ts';

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
});
