/**
 * What `npm start` and `npm run dev` both run behind their site: the attempt store and the lab
 * server (WebSocket, attempts API, class view) on the teaching cluster.
 */
import type { ClusterPool } from '../broker/cluster-pool.ts';
import type { KafkaCluster } from '../broker/cluster.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { pollHealth } from '../broker/health.ts';
import { installAttemptCrashGuard } from '../runner/attempt-scope.ts';
import { createLabSession } from '../runner/lab-session.ts';
import { sandboxStartCheck } from '../runner/program/sandbox/policy.ts';
import { sweepStaleWorkDirs } from '../runner/program/work-dirs.ts';
import { limitsFromEnv, singleUserLoopback } from '../server/admission.ts';
import { DEFAULT_ATTEMPTS_FILE, openAttemptStore } from '../server/attempt-store.ts';
import { displayPath } from '../core/paths.ts';
import { DATABASE_URL_ENV, openPostgresAttemptStore } from '../server/postgres-attempt-store.ts';
import { createLabServer, type LabServer } from '../server/lab-server.ts';
import { ORIGINS_ENV, originsFromEnv } from '../server/perimeter.ts';
import { oidcConfigFromEnv } from '../server/sign-in/oidc-config.ts';
import { OidcSignIn } from '../server/sign-in/oidc.ts';
import { SESSION_SECRET_ENV, sessionSecretFromEnv } from '../server/sign-in/sealed-cookie.ts';

/** PORT and HOST from the environment, checked. */
export function listenAddressFromEnv(): { port: number; host: string } {
  const port = Number(process.env.PORT ?? 4321);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new KafkaIqError('INVALID_INPUT', `PORT must be a port number, got "${process.env.PORT}".`);
  return { port, host: process.env.HOST ?? '127.0.0.1' };
}

export interface LabBackend {
  server: LabServer;
  /** Whether the class view is on (KAFKAIQ_INSTRUCTOR_TOKEN). */
  classView: boolean;
  close(): Promise<void>;
}

export async function startLabBackend(options: {
  clusters: ClusterPool;
  cluster: Pick<KafkaCluster, 'brokers' | 'control' | 'health'>;
  port: number;
  host: string;
  staticDir: string;
  /** The command to name in a "port taken" error, e.g. 'npm start'. */
  command: string;
  /** From instructorTokenFromEnv(), read before anything starts so a bad token fails at once. */
  instructorToken: string | undefined;
  /** Start-up lines (the sandbox, the sweep); console.log unless given. */
  log?: (line: string) => void;
}): Promise<LabBackend> {
  const { clusters, cluster, instructorToken } = options;
  // Checked before anything starts: a typo in the list must fail here, not open or close the server later.
  const origins = originsFromEnv();
  // Before anything listens: refuse to serve unsandboxed programs beyond loopback.
  const sandbox = sandboxStartCheck(options.host);
  const log = options.log ?? ((line: string) => console.log(line));
  log(sandbox.summary);
  if (!singleUserLoopback(options.host) && origins.length === 0 && !['127.0.0.1', 'localhost', '::1'].includes(options.host)) {
    log(`Only loopback addresses reach this server: learners on other machines get 421 until you set ${ORIGINS_ENV} (e.g. ${ORIGINS_ENV}=https://kafka.example.edu).`);
  }
  const swept = sweepStaleWorkDirs();
  if (swept.dirs || swept.cgroups) log(`Swept ${swept.dirs} work dirs and ${swept.cgroups} cgroups left by KafkaIQ servers that were killed.`);
  installAttemptCrashGuard((line) => log(`[lab-server] ${line}`));
  // Checked before anything starts too: a wrong setting is one line naming it.
  const signInConfig = oidcConfigFromEnv(process.env, `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}`);
  const { secret, shared } = sessionSecretFromEnv();
  // Several lab servers share one PostgreSQL; one server alone keeps a SQLite file. Opened before
  // the broker health poll, so a wrong URL fails the start with nothing left running.
  const databaseUrl = process.env[DATABASE_URL_ENV]?.trim();
  const store = databaseUrl ? await openPostgresAttemptStore(databaseUrl) : openAttemptStore();
  log(databaseUrl ? `Attempts: PostgreSQL (${DATABASE_URL_ENV}), shared by every lab server on it.` : `Attempts: ${displayPath(DEFAULT_ATTEMPTS_FILE)} (set ${DATABASE_URL_ENV} to share them between lab servers).`);
  const health = cluster.health ?? pollHealth(cluster.brokers);
  const signIn = signInConfig ? new OidcSignIn(signInConfig, secret, store, (line) => log(`[lab-server] ${line}`)) : undefined;
  if (signIn) {
    log(`Sign-in: ${signInConfig!.issuer} (client ${signInConfig!.clientId}), redirect URI ${signInConfig!.publicUrl}/auth/callback${shared ? '' : `; sessions end when this server stops (set ${SESSION_SECRET_ENV}, the same on every server, to keep them)`}.`);
    const problem = await signIn.probe();
    if (problem) log(problem);
  }
  const server = await createLabServer({
    port: options.port,
    host: options.host,
    staticDir: options.staticDir,
    createSession: (session) => createLabSession({ ...session, cluster, clusters }),
    store,
    // A manual broker restart breaks every grade on the cluster: only on a private, single-user server.
    cluster: { brokers: cluster.brokers.join(','), brokerFaults: cluster.control !== null && singleUserLoopback(options.host), health, unsandboxed: sandbox.warning },
    instructorToken,
    allowMissingOrigin: process.env.KAFKAIQ_ALLOW_NO_ORIGIN === '1',
    allowedOrigins: origins,
    trustProxy: process.env.KAFKAIQ_TRUST_PROXY === '1',
    limits: limitsFromEnv(),
    signIn,
  }).catch(async (err: NodeJS.ErrnoException) => {
    await store.close();
    health.close();
    if (err.code === 'EADDRINUSE') throw new KafkaIqError('PORT_TAKEN', `Port ${options.port} is taken: stop the other program or choose another with PORT=4322 ${options.command}.`);
    throw err;
  });
  return {
    server,
    classView: instructorToken !== undefined,
    async close() {
      await server.close();
      health.close();
      await store.close();
    },
  };
}

/** Runs stop() once on Ctrl-C or SIGTERM, then exits. */
export function stopOnSignals(stop: () => Promise<void>): void {
  const shutdown = async () => {
    await stop();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}
