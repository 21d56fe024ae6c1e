/**
 * Who talks to Kafka, and with which password. The teaching broker speaks SASL/PLAIN only, and a
 * password is HMAC-SHA256(server secret, user name) (broker/src/.../HmacPlainCallbackHandler.java
 * checks it the same way): the grader and the brokers are super users; every attempt gets a user
 * of its own whose name carries its expiry. The secret lives in one 0600 file that the lab server
 * and the brokers it starts share; learner programs never see it, only their own derived password.
 */
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { SASLOptions } from 'kafkajs';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { STATE_DIR, displayPath } from '../core/paths.ts';

export const BROKER_USER = 'kafkaiq-broker';
export const GRADER_USER = 'kafkaiq-grader';
/** Same shape as the broker's ATTEMPT_USER pattern: attempt-NAMESPACE.EXPIRY (unix seconds). */
const ATTEMPT_USER = /^attempt-[a-z0-9-]{1,80}\.[0-9]{1,12}$/;

/** KAFKAIQ_KAFKA_SECRET_FILE, or one file per state folder (every broker and server of a checkout). */
export function secretFile(): string {
  return process.env.KAFKAIQ_KAFKA_SECRET_FILE ?? path.join(STATE_DIR, 'kafka-sasl.secret');
}

let cached: { file: string; secret: Buffer } | null = null;

/** The shared secret, created (0600, 48 random bytes) on first use. Refuses a file others can read. */
export function kafkaSecret(): Buffer {
  const file = secretFile();
  if (cached?.file === file) return cached.secret;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    // 'wx': never overwrite a secret another process created meanwhile.
    fs.writeFileSync(file, randomBytes(48).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const mode = fs.statSync(file).mode & 0o077;
  if (mode !== 0 && process.platform !== 'win32') {
    throw new KafkaIqError('INVALID_INPUT', `The Kafka SASL secret ${displayPath(file)} is readable by other users: run 'chmod 600 ${displayPath(file)}'.`);
  }
  const secret = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'utf8');
  if (secret.length < 32) throw new KafkaIqError('INVALID_INPUT', `The Kafka SASL secret ${displayPath(file)} is shorter than 32 bytes: delete it and restart the broker.`);
  cached = { file, secret };
  return secret;
}

export function passwordFor(user: string): string {
  return createHmac('sha256', kafkaSecret()).update(user, 'utf8').digest('base64url');
}

/** The grader's login: a super user (super.users), over the same SASL listener as everyone. */
export function graderSasl(): SASLOptions {
  const username = process.env.KAFKAIQ_KAFKA_USERNAME ?? GRADER_USER;
  const password = process.env.KAFKAIQ_KAFKA_PASSWORD ?? passwordFor(username);
  return { mechanism: 'plain', username, password };
}

/** An attempt's user name: the namespace (already [a-z0-9-]) and the moment its password stops working. */
export function attemptUser(namespace: string, expiresAtMs: number): string {
  const user = `attempt-${namespace.toLowerCase()}.${Math.ceil(expiresAtMs / 1000)}`;
  if (!ATTEMPT_USER.test(user)) throw new KafkaIqError('INTERNAL', `attempt namespace "${namespace}" does not make a valid Kafka user name`);
  return user;
}

/** The documented env a learner program gets (the kafkajs wrapper applies it; other clients read it). */
export function saslEnv(user: string): Record<string, string> {
  return { KAFKA_SASL_MECHANISM: 'PLAIN', KAFKA_SASL_USERNAME: user, KAFKA_SASL_PASSWORD: passwordFor(user), KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT' };
}

/** A JAAS line for Java clients and the brokers (values never contain quotes: names are checked, passwords are base64url). */
export function plainJaas(user: string, password: string, extra = ''): string {
  return `org.apache.kafka.common.security.plain.PlainLoginModule required username="${user}" password="${password}"${extra};`;
}

/** Java client properties for a user (the JVM tools: --command-config, or ClientConfigAgent). */
export function javaClientProperties(user: string, password = passwordFor(user)): string {
  return ['security.protocol=SASL_PLAINTEXT', 'sasl.mechanism=PLAIN', `sasl.jaas.config=${plainJaas(user, password)}`].join('\n') + '\n';
}

/** Writes a 0600 client properties file (replacing any earlier one) and returns its path. */
export function writeClientProperties(file: string, user: string, password?: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, javaClientProperties(user, password), { mode: 0o600 });
  return file;
}

/** The grader's client properties, for kafka-transactions and friends. */
export function graderClientProperties(): string {
  const { username, password } = graderSasl() as { username: string; password: string };
  return writeClientProperties(path.join(STATE_DIR, 'grader-client.properties'), username, password);
}
