/**
 * How far apart the lanes' ports are. A lane's files use ports relative to its teaching broker's
 * (KAFKAIQ_BROKER_PORT): the 3-node cluster +3..+5, broker-recovery +8, broker-supervision +10,
 * the lab matrix's second broker +20, each with a controller 10000 above.
 */
export const LANE_PORT_STRIDE = 30;
