export { KafkaIqError, describeError, type KafkaIqErrorCode } from '../../src/shared/errors.ts';
