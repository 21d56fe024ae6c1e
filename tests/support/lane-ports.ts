/**
 * How far apart the lanes' ports are. A lane's files use ports relative to its teaching broker's
 * (KAFKAIQ_BROKER_PORT): the 3-node cluster +3..+5, broker-recovery +8, broker-supervision +10,
 * the lab matrix's second broker +20, each with a controller 10000 above.
 */
export const LANE_PORT_STRIDE = 30;

/**
 * Lanes of the kafka tier unless KAFKAIQ_TEST_LANES says otherwise: the matrix's two shards and two
 * lanes for every other file. Most of a grade, and of most other files, is waiting (session
 * timeouts, restarts, a browser's page loads), so one lane for the other files left the cores
 * idle for much of the matrix's second half and the minutes after it. The matrix gives the other
 * lanes room: its queue grows it past its floor only while the cores are not busy (matrix-queue.ts),
 * as a fixed fourth lane beside a fixed 8 grades had saturated the cores until page loads and a
 * 3-node cluster's requests timed out (docs/benchmarks/journal.md).
 */
export const DEFAULT_TEST_LANES = 4;

/** The lanes of this run: one when KAFKA_BROKERS names a cluster (every file on it, one at a time). */
export function testLanes(env: NodeJS.ProcessEnv = process.env): number {
  return env.KAFKA_BROKERS ? 1 : Number(env.KAFKAIQ_TEST_LANES) || DEFAULT_TEST_LANES;
}
