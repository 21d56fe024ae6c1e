import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirst from './tests/support/sequencer.ts';
import { testLanes } from './tests/support/lane-ports.ts';
import { SERVER_V8_FLAGS } from './bin/runtime-pin.mjs';

/**
 * Two tiers. `npm run test:unit` runs the unit tier alone (the edit loop); `npm test` runs both,
 * the unit tier first.
 *  - unit: tests/unit/, no broker. Files run in parallel. KAFKA_BROKERS points at an address that
 *    cannot resolve and there is no cluster pool, so a unit test that reaches for Kafka (directly,
 *    through connectCluster or a ClusterPool, or through a program it starts) fails instead of
 *    finding or starting a broker.
 *  - kafka: every other tests/ file, on real brokers started by tests/support/global-setup.ts.
 *    Files run side by side in lanes (KAFKAIQ_TEST_LANES, 4), one per worker, each lane on brokers
 *    of its own (tests/support/lane.ts): the lab matrix and the browser tests restart their broker on
 *    purpose, which must not land in another file's grade.
 */
const NO_BROKER = 'no-broker-in-unit-tests.invalid:9092';
const LANES = testLanes();

export default defineConfig({
  test: {
    teardownTimeout: 30_000,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['tests/unit/**/*.test.ts'],
          globalSetup: ['tests/support/pinned-node.ts'],
          env: { KAFKA_BROKERS: NO_BROKER, KAFKAIQ_CLUSTER_POOL: '' },
          pool: 'forks',
          // At least 4 files at once even on 2 cores: most of a unit file's time is spent waiting
          // (timers, child processes), not computing.
          maxWorkers: Math.max(4, availableParallelism()),
          testTimeout: 60_000,
          hookTimeout: 60_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'kafka',
          include: ['tests/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'tests/unit/**'],
          globalSetup: ['tests/support/pinned-node.ts', 'tests/support/global-setup.ts'],
          setupFiles: ['tests/support/lane.ts'],
          pool: 'forks',
          // The workers grade in their own process, relays included: the lab server's V8 flags.
          execArgv: SERVER_V8_FLAGS,
          maxWorkers: LANES,
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 180_000,
          // A browser test polls a page until an island has read localStorage and drawn: at 100 %
          // CPU with the lanes grading, a reload takes seconds, not vitest's default 1 s. The
          // polled values are unchanged; only how long a page may take to draw them.
          expect: { poll: { timeout: 15_000 } },
        },
      },
    ],
  },
});
