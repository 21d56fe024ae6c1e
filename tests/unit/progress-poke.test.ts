// PipelineProgress polls at once when the program commits while the grade waits on its progress.
import { describe, expect, it } from 'vitest';
import type { PipelineLab } from '../../src/shared/lab.ts';
import { PipelineProgress, type ProgressSource } from '../../lab-server/runner/pipeline/progress.ts';

/** A lab with no topics: a poll asks nothing of a broker, it only ends. */
function progressWithoutTopics(): PipelineProgress {
  const src = {
    kafka: null as never,
    brokers: [],
    lab: { topics: [] } as unknown as PipelineLab,
    groupId: 'g',
    realTopic: (t: string) => t,
    written: () => [],
    database: () => null,
    watchStages: () => false,
    moved: () => {},
    transactionOpen: () => false,
    readFromDatabaseSinceStart: () => true,
  } satisfies ProgressSource;
  return new PipelineProgress(src);
}

const timed = async (work: () => Promise<void>) => {
  const started = performance.now();
  await work();
  return performance.now() - started;
};

describe('the progress of a pipeline program', () => {
  it('is polled as soon as the program commits while the grade waits on it, so the wait ends then', async () => {
    const progress = progressWithoutTopics();
    const waited = await timed(async () => {
      const next = progress.nextPoll(2_000);
      progress.committed();
      await next;
    });
    expect(waited).toBeLessThan(500);
  });

  it('is not polled for a commit when nothing waits on it: the next tick will do', async () => {
    const progress = progressWithoutTopics();
    progress.committed();
    // The commit above came with no waiter: no poll ends, so this wait runs to its bound.
    const waited = await timed(() => progress.nextPoll(300));
    expect(waited).toBeGreaterThanOrEqual(290);
  });

  it('polls for commits at most every 100 ms, however fast a program commits', async () => {
    const progress = progressWithoutTopics();
    const first = progress.nextPoll(2_000);
    progress.committed();
    await first;
    // A program committing in a loop: the next poll waits out the gap after the last one.
    const waited = await timed(async () => {
      const next = progress.nextPoll(2_000);
      progress.committed();
      progress.committed();
      await next;
    });
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(waited).toBeLessThan(1_000);
    await progress.close();
  });
});
