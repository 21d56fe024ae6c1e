import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Two tiers. `npm run test:unit` runs the unit tier alone (the edit loop); `npm test` runs both,
 * the unit tier first.
 *  - unit: tests/unit/, no broker. Files run in parallel. KAFKA_BROKERS points at an address that
 *    cannot resolve and there is no cluster pool, so a unit test that reaches for Kafka (directly,
 *    through connectCluster or a ClusterPool, or through a program it starts) fails instead of
 *    finding or starting a broker.
 *  - kafka: every other tests/ file, on one real broker started by tests/support/global-setup.ts.
 */
const NO_BROKER = 'no-broker-in-unit-tests.invalid:9092';

export default defineConfig({
  test: {
    teardownTimeout: 30_000,
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
          // One real broker is shared by every file. Files run one after another: the lab checks and the
          // browser test restart that broker on purpose, which must not land in another file's grade.
          pool: 'forks',
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 180_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
