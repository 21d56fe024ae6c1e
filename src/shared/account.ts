/**
 * Sign-in's contracts, shared by the browser and the lab server: what `GET /auth/me` answers. A
 * learner signed in with the class's identity provider keeps one history across browsers, under
 * the name the provider gives (never a self-chosen one); without sign-in the course is anonymous.
 */
import { z } from 'zod';

export const SIGN_IN_PATHS = { login: '/auth/login', callback: '/auth/callback', logout: '/auth/logout', me: '/auth/me' } as const;

/** The learner ids of signed-in accounts start with this; an anonymous browser's id never does. */
export const ACCOUNT_LEARNER_PREFIX = 'acct_';

export const accountSchema = z
  .object({
    name: z.string().max(200).describe('The name the identity provider gives (its name claim, else the email)'),
    email: z.string().max(320).nullable().describe('The email claim, when the provider gives one'),
    instructor: z.boolean().describe('Whether this account may open the class view'),
  })
  .strict();

export const accountStatusSchema = z
  .object({
    signInEnabled: z.boolean().describe('Whether this server signs learners in with an identity provider (KAFKAIQ_OIDC_ISSUER)'),
    account: accountSchema.nullable().describe('The signed-in account, or null when anonymous'),
  })
  .strict();

export type Account = z.infer<typeof accountSchema>;
export type AccountStatus = z.infer<typeof accountStatusSchema>;
