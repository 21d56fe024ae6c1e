/**
 * What a lab is, in the facts an instructor (or a curious learner) asks about: its kind, its
 * fault plans, its checks and which fixtures prove each can fail, its time limits and the clients
 * it grades. One source for `kafkaiq labs` (text) and the site's Labs page (built from the same
 * lab definitions at build time).
 */
import type { FaultSpec, KafkajsDefaults, LabDefinition } from './lab.ts';
import { checkCoverageRows, type CheckCoverageRow, type FixtureDeclaration } from './lab-coverage.ts';
import { CLIENT_INFO, KAFKA_CLIENTS } from './clients.ts';
import { describeApiStateLimits } from './api-limits.ts';

/**
 * Clients a learner's program may use. Programs are TypeScript on kafkajs (patched, see
 * patches/kafkajs+2.2.4.patch); other languages enter a lab only as command fixtures.
 */

export interface LabFacts {
  id: string;
  title: string;
  summary: string;
  kind: LabDefinition['kind'];
  cluster: LabDefinition['cluster'];
  instances: number;
  faults: { full: string[]; quick: string[] };
  checks: CheckCoverageRow[];
  timeLimitMs: number;
  quickTimeLimitMs: number;
  clients: readonly string[];
  /** Programs in other languages the matrix grades (e.g. Kafka's own TransactionalMessageCopier). */
  commands: { name: string; expect: 'pass' | 'fail' }[];
  /** Client settings the lab runtime applies where the program sets none (injectedClientSettings). */
  clientSettings: InjectedClientSetting[];
  /** For a lab whose program calls the lab HTTP API: how much state an attempt may keep there (api-limits.ts). */
  apiState: string | null;
}

/**
 * One client setting the lab runtime gives a learner's program where the program sets none (the
 * wrappers lab-server/runner/program/child/kafkajs-shim.ts and platformatic-shim.ts apply them).
 * The workbench's environment panel lists them, so nothing a lab changes is hidden: a program
 * that relies on one of these behaves differently in production, where the client's own default
 * applies.
 */
export interface InjectedClientSetting {
  /** The kafkajs option, where it is given: e.g. "new Kafka({ retry: { retries } })". */
  kafkajs: string;
  /** What it governs, when the option's name does not say. */
  about?: string;
  /** This lab's value, e.g. "10", "100 ms". */
  value: string;
  /** kafkajs 2.2.4's own default: what the program gets outside the lab. */
  kafkajsDefault: string;
  /** The same setting as the @platformatic/kafka wrapper applies it, or null when it does not. */
  platformatic: { option: string; clientDefault: string; note?: string } | null;
}

const duration = (ms: number) => (ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`);

/**
 * Every client setting a lab injects, with its value and the client's own default: the lab's
 * `kafkajs` section (client retry, consumer timeouts, producer transaction timeout), then what
 * the wrappers add in every lab (kafkajs's log level; the lab server's login, when it needs one).
 * Defaults: kafkajs 2.2.4 src/retry/defaults.js, src/consumer/index.js,
 * src/producer/eosManager/index.js, src/index.js; @platformatic/kafka 2.12.1
 * dist/clients/base/options.js, dist/clients/consumer/options.js, dist/clients/producer/producer.js.
 */
export function injectedClientSettings(kafkajs: KafkajsDefaults): InjectedClientSetting[] {
  const rows: InjectedClientSetting[] = [];
  const retry = kafkajs.client.retry ?? {};
  if (retry.retries !== undefined) {
    rows.push({
      kafkajs: 'new Kafka({ retry: { retries } })',
      about: "how often that Kafka's admin and producers retry a failed request (a producer's own retry.retries wins); a consumer keeps 5 unless it passes a retry object",
      value: String(retry.retries),
      kafkajsDefault: '5',
      platformatic: { option: 'retries', clientDefault: '3', note: 'not given to an idempotent producer, which retries without limit unless it sets a count' },
    });
  }
  if (retry.initialRetryTime !== undefined) {
    rows.push({
      kafkajs: 'new Kafka({ retry: { initialRetryTime } })',
      about: 'the first wait before a retry; it doubles after each',
      value: duration(retry.initialRetryTime),
      kafkajsDefault: '300 ms',
      platformatic: { option: 'retryDelay', clientDefault: '1 s', note: 'the wait before every retry' },
    });
  }
  if (retry.maxRetryTime !== undefined) {
    rows.push({ kafkajs: 'new Kafka({ retry: { maxRetryTime } })', about: 'the longest wait between two tries', value: duration(retry.maxRetryTime), kafkajsDefault: '30 s', platformatic: null });
  }
  const consumer = kafkajs.consumer;
  const consumerRows: [keyof typeof consumer, string | undefined, string, string, string][] = [
    ['sessionTimeout', 'how long the group waits for a silent member before it rebalances without it', '30 s', 'sessionTimeout', '60 s'],
    ['heartbeatInterval', undefined, '3 s', 'heartbeatInterval', '3 s'],
    ['rebalanceTimeout', 'how long a rebalance waits for every member to rejoin', '60 s', 'rebalanceTimeout', '102 s'],
    ['maxWaitTimeInMs', 'how long a fetch waits for data', '5 s', 'maxWaitTime', '5 s'],
  ];
  for (const [key, about, kafkajsDefault, option, clientDefault] of consumerRows) {
    const value = consumer[key];
    if (value !== undefined) rows.push({ kafkajs: `kafka.consumer({ ${key} })`, ...(about ? { about } : {}), value: duration(value), kafkajsDefault, platformatic: { option, clientDefault } });
  }
  if (kafkajs.producer.transactionTimeout !== undefined) {
    rows.push({ kafkajs: 'kafka.producer({ transactionTimeout })', about: 'how long a transaction may stay open before the coordinator aborts it', value: duration(kafkajs.producer.transactionTimeout), kafkajsDefault: '60 s', platformatic: null });
  }
  rows.push({ kafkajs: 'new Kafka({ logLevel, logCreator })', about: 'one readable line per log entry', value: 'WARN', kafkajsDefault: 'INFO, as JSON', platformatic: null });
  rows.push({
    kafkajs: 'new Kafka({ sasl })',
    about: 'only when the lab server requires a login',
    value: 'KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD',
    kafkajsDefault: 'none',
    platformatic: { option: 'sasl', clientDefault: 'none' },
  });
  return rows;
}

/** An injected setting as one line of text, as `kafkaiq labs` prints it. */
export function formatClientSetting(row: InjectedClientSetting): string {
  const platformatic = row.platformatic
    ? `@platformatic/kafka ${row.platformatic.option}, default ${row.platformatic.clientDefault}${row.platformatic.note ? `, ${row.platformatic.note}` : ''}`
    : '@platformatic/kafka: not applied';
  return `${row.kafkajs}${row.about ? ` (${row.about})` : ''}: ${row.value}; kafkajs default ${row.kafkajsDefault}; ${platformatic}`;
}

/** One fault of a plan as a short phrase, e.g. "kill at after:send | before:commit (instance 3)". */
export function describeFault(fault: FaultSpec): string {
  const parts: string[] = [fault.kind];
  if (fault.at.length) parts.push(`at ${fault.at.join(' | ')}`);
  const details: string[] = [];
  if (fault.topic) details.push(`stage writing ${fault.topic}`);
  if (fault.path) details.push(`calls to ${fault.path}`);
  if (fault.instance !== 1) details.push(`instance ${fault.instance}`);
  if (fault.occurrence !== 1) details.push(`call ${fault.occurrence}`);
  if (details.length) parts.push(`(${details.join(', ')})`);
  return parts.join(' ');
}

export function labFacts(id: string, definition: LabDefinition, fixtures: readonly FixtureDeclaration[]): LabFacts {
  return {
    id,
    title: definition.title,
    summary: definition.summary,
    kind: definition.kind,
    cluster: definition.cluster,
    instances: definition.instances,
    faults: { full: definition.faults.full.map(describeFault), quick: definition.faults.quick.map(describeFault) },
    checks: checkCoverageRows(definition, fixtures),
    timeLimitMs: definition.timeLimitMs,
    quickTimeLimitMs: definition.quickTimeLimitMs,
    // Every lab takes a program in either client (one env contract); say where a reference solution exists.
    clients: KAFKA_CLIENTS.map((c) => {
      const reference = c === 'kafkajs' || fixtures.some((f) => f.program === `solution.${c}`);
      return `${CLIENT_INFO[c].label}${reference ? ' (reference solution)' : ''}`;
    }),
    commands: definition.commandFixtures.map((c) => ({ name: c.name, expect: c.expect })),
    clientSettings: injectedClientSettings(definition.kafkajs),
    apiState: 'api' in definition && definition.api ? describeApiStateLimits() : null,
  };
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

/** Who proves a check can fail, as one phrase: the fixtures, or the declared reason why none can. */
export function provenBy(row: CheckCoverageRow): string {
  if (row.none !== undefined) return `coverage: 'none': ${row.none}`;
  return row.provedBy.length ? `failed by ${row.provedBy.join(', ')}` : 'NOT PROVEN: no fixture fails it';
}

/** The facts of one lab as the text `kafkaiq labs` prints. */
export function formatLabFacts(facts: LabFacts): string {
  const setup = [facts.kind, facts.cluster === 'three-nodes' ? '3-broker cluster' : 'one broker', `${facts.instances} instance${facts.instances === 1 ? '' : 's'}`];
  const lines = [
    `${facts.id}  ${facts.title}`,
    `  ${setup.join(', ')}; time limit ${seconds(facts.timeLimitMs)} (quick ${seconds(facts.quickTimeLimitMs)})`,
    `  clients: ${facts.clients.join(', ')}${facts.commands.length ? `; reference commands: ${facts.commands.map((c) => `${c.name} (must ${c.expect})`).join(', ')}` : ''}`,
    `  faults, full plan:  ${facts.faults.full.join('; ')}`,
    `  faults, quick plan: ${facts.faults.quick.join('; ')}`,
    '  checks:',
    ...facts.checks.map((row) => `    ${row.check.padEnd(30)} ${provenBy(row)}`),
    '  client settings applied where the program sets none:',
    ...facts.clientSettings.map((row) => `    ${formatClientSetting(row)}`),
    ...(facts.apiState ? [`  lab API: ${facts.apiState}`] : []),
  ];
  return lines.join('\n');
}
