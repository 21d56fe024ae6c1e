/**
 * The point table: which message on the wire each crash point a report names is. One table for
 * every client in every language, since it reads the protocols, not a library's calls.
 *
 * | point                | held message (before: the request, before the server; after: the answer, before the program) |
 * | -------------------- | --------------------------------------------------------------------------------------------- |
 * | before:send          | a Produce request carrying records (not control batches)                                      |
 * | after:send           | its Produce response                                                                          |
 * | before:sendOffsets   | a TxnOffsetCommit request (the input offsets put into the transaction)                        |
 * | after:sendOffsets    | its TxnOffsetCommit response                                                                  |
 * | before:commit        | an EndTxn request with committed = true                                                       |
 * | after:commit         | its EndTxn response                                                                           |
 * | before:abort         | an EndTxn request with committed = false                                                      |
 * | after:abort          | its EndTxn response                                                                           |
 * | before:commitOffsets | an OffsetCommit request (a consumer's own commit)                                             |
 * | after:commitOffsets  | its OffsetCommit response                                                                     |
 * | before:db-write      | a PostgreSQL Query or Execute of INSERT, UPDATE, DELETE, MERGE or COPY                         |
 * | after:db-write       | its CommandComplete                                                                           |
 * | before:db-commit     | a PostgreSQL Query or Execute of COMMIT                                                       |
 * | after:db-commit      | its CommandComplete                                                                           |
 * | before:http          | an HTTP/1.1 request head to the lab API                                                       |
 * | after:http           | its response head                                                                             |
 *
 * An answer the broker refused (an error code) is a failed call, not an after: point.
 *
 * The actions at a point: kill (the message is held, then dropped with the instance), pause and
 * zombie (held until the instance is resumed), stop (the message goes on; SIGTERM follows), and
 * error, which only before:send takes: the relay never forwards that Produce and answers it itself
 * with INVALID_RECORD for each of its partitions (kafka-answers.ts), so the client fails the send.
 */
import type { CrashPoint } from '../../../src/shared/report.ts';
import type { HttpRequestMessage, HttpResponseMessage } from './http-wire.ts';
import type { PostgresBackendMessage, PostgresFrontendMessage } from './postgres-wire.ts';

/** A message named as a crash point, with what the runner reports of it. */
export interface WirePoint {
  point: CrashPoint;
  /** The topics the call writes or its transaction has written (Kafka points). */
  written: string[];
  records?: number;
  /** The server refused the call: its error, by name. */
  error?: string;
  /** A SQL point: whether its connection is inside a SQL transaction (unset for Kafka and HTTP points). */
  txnOpen?: boolean;
  /** Whether the call's transaction carries the batch being processed (for a hit's "inside a transaction"). */
  carries?: () => boolean;
  /** The producer's transactional id (Kafka points of a transactional producer). */
  transactionalId?: string;
  /** HTTP points: the path of the request (of the request answered, for after:http), without its query. */
  path?: string;
}

/**
 * A PostgreSQL message as a crash point, or null. `inTransaction`: what the connection's last
 * ReadyForQuery said (inside a transaction block, or a failed one); a COMMIT's answer ends it.
 */
export function postgresPoint(message: PostgresFrontendMessage | PostgresBackendMessage, inTransaction: boolean): WirePoint | null {
  const at = (point: CrashPoint, txnOpen = inTransaction): WirePoint => ({ point, written: [], txnOpen });
  switch (message.kind) {
    case 'query':
      if (message.statements.includes('write')) return at('before:db-write');
      if (message.statements.includes('commit')) return at('before:db-commit');
      return null;
    case 'execute':
      if (message.statement === 'write') return at('before:db-write');
      if (message.statement === 'commit') return at('before:db-commit');
      return null;
    case 'command-complete':
      if (message.statement === 'write') return at('after:db-write');
      if (message.statement === 'commit') return at('after:db-commit', false);
      return null;
    default:
      return null;
  }
}

/** An HTTP message as a crash point; `path`: its request's, as requestPath gives it. */
export function httpPoint(message: HttpRequestMessage | HttpResponseMessage, path: string): WirePoint {
  return { point: message.kind === 'request' ? 'before:http' : 'after:http', written: [], path };
}

/**
 * The path of a request target, compared exactly with an armed path: origin-form ("/a/b?q") or
 * absolute-form ("http://host/a/b?q", which a proxy-minded client may send); '' for anything else.
 */
export function requestPath(target: string): string {
  const origin = target.startsWith('/') ? target : /^https?:\/\/[^/?#]*(\/[^?#]*)?/i.exec(target)?.[1] ?? '';
  const end = origin.search(/[?#]/);
  return end < 0 ? origin : origin.slice(0, end);
}
