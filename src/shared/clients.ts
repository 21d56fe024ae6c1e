/**
 * The Kafka clients a learner program may be written with. Every lab takes a program in either,
 * with the same env contract and the same grading; a lab folder holds a reference solution (and
 * optionally a starter and hints) per client where the lab's point depends on the client.
 * Shared by the browser (the client picker) and the server (fixture discovery).
 */
import { z } from 'zod';

export const KAFKA_CLIENTS = ['kafkajs', 'platformatic'] as const;
export const kafkaClientSchema = z.enum(KAFKA_CLIENTS).describe('The Kafka client a program is written with');
export type KafkaClient = z.infer<typeof kafkaClientSchema>;

export const CLIENT_INFO: Record<KafkaClient, { module: string; label: string; version: string }> = {
  kafkajs: { module: 'kafkajs', label: 'kafkajs 2.2.4', version: '2.2.4' },
  platformatic: { module: '@platformatic/kafka', label: '@platformatic/kafka 2.12.1', version: '2.12.1' },
};

/**
 * The file of a lab folder for a client: kafkajs, the course's first client, keeps the plain
 * names (`solution.ts`, `starter.ts`, `hints.md`); another client's sit beside them with its id
 * before the extension (`solution.platformatic.ts`, `starter.platformatic.ts`, `hints.platformatic.md`).
 */
export function clientFile(base: 'solution.ts' | 'starter.ts' | 'hints.md', client: KafkaClient): string {
  if (client === 'kafkajs') return base;
  const dot = base.lastIndexOf('.');
  return `${base.slice(0, dot)}.${client}${base.slice(dot)}`;
}
