/**
 * Whose work a request is: the signed-in account's when its cookie is valid, else the anonymous
 * browser's own id (a credential only that browser holds). An anonymous id offered together with
 * a valid account cookie joins that account: the browser proved it holds both. An account's id
 * offered without its cookie is refused, so it is worth nothing to whoever copies it.
 */
import { ACCOUNT_LEARNER_PREFIX } from '../../../src/shared/account.ts';
import { KafkaIqError } from '../../../src/shared/errors.ts';
import type { AttemptStore } from '../attempt-store.ts';
import type { SignedInAccount } from './oidc.ts';

export type ResolveLearner = (offered: string) => Promise<string>;

export function learnerResolver(account: SignedInAccount | null, store: Pick<AttemptStore, 'adopt'>): ResolveLearner {
  return async (offered) => {
    if (account) {
      if (!offered.startsWith(ACCOUNT_LEARNER_PREFIX)) await store.adopt(offered, account.learner);
      return account.learner;
    }
    if (offered.startsWith(ACCOUNT_LEARNER_PREFIX)) throw new KafkaIqError('INVALID_INPUT', 'This work belongs to a signed-in account: sign in again to reach it.');
    return offered;
  };
}
