/** The bootstrap servers of this file's lane (set by lane.ts before the file loads). */
export function testBrokers(): string[] {
  const brokers = process.env.KAFKA_BROKERS?.split(',').map((b) => b.trim()).filter(Boolean) ?? [];
  if (brokers.length === 0) throw new Error('KAFKA_BROKERS is not set: run the file through vitest (tests/support/lane.ts sets it).');
  return brokers;
}
