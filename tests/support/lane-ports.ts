/**
 * How far apart the lanes' ports are. A lane's files use ports relative to its teaching broker's
 * (KAFKAIQ_BROKER_PORT): the 3-node cluster +3..+5, broker-recovery +8, broker-supervision +10,
 * the lab matrix's second broker +20, each with a controller 10000 above.
 */
export const LANE_PORT_STRIDE = 30;

/**
 * Lanes of the kafka tier unless KAFKAIQ_TEST_LANES says otherwise: the matrix's two shards (4
 * grades each) and one lane for every other file. Most of a grade is waiting (session timeouts,
 * restarts, a broker's restart), yet a fourth lane keeps 2 cores saturated for the whole run, and
 * then the browser tests' page loads and a 3-node cluster's request timeouts run out (figures in
 * docs/benchmarks/journal.md).
 */
export const DEFAULT_TEST_LANES = 3;

/** The lanes of this run: one when KAFKA_BROKERS names a cluster (every file on it, one at a time). */
export function testLanes(env: NodeJS.ProcessEnv = process.env): number {
  return env.KAFKA_BROKERS ? 1 : Number(env.KAFKAIQ_TEST_LANES) || DEFAULT_TEST_LANES;
}
