/**
 * Sign-in's settings, from the environment: off unless KAFKAIQ_OIDC_ISSUER is set, and then each
 * setting checked at start with one line naming the one that is wrong.
 */
import { z } from 'zod';
import { KafkaIqError } from '../../../src/shared/errors.ts';

export const OIDC_ENV = {
  issuer: 'KAFKAIQ_OIDC_ISSUER',
  clientId: 'KAFKAIQ_OIDC_CLIENT_ID',
  clientSecret: 'KAFKAIQ_OIDC_CLIENT_SECRET',
  publicUrl: 'KAFKAIQ_PUBLIC_URL',
  allowedEmailDomain: 'KAFKAIQ_OIDC_ALLOWED_EMAIL_DOMAIN',
  allowedGroup: 'KAFKAIQ_OIDC_ALLOWED_GROUP',
  groupsClaim: 'KAFKAIQ_OIDC_GROUPS_CLAIM',
  instructorEmails: 'KAFKAIQ_OIDC_INSTRUCTOR_EMAILS',
  instructorGroup: 'KAFKAIQ_OIDC_INSTRUCTOR_GROUP',
} as const;

const list = (text: string | undefined) => (text ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
const httpUrl = z.url({ protocol: /^https?$/ });

export const oidcConfigSchema = z
  .object({
    issuer: httpUrl.describe(`${OIDC_ENV.issuer}: the provider's issuer URL, as its discovery document names it`),
    clientId: z.string().min(1).max(200).describe(`${OIDC_ENV.clientId}: this course's client id at the provider`),
    clientSecret: z.string().min(1).max(500).describe(`${OIDC_ENV.clientSecret}: its client secret`),
    publicUrl: httpUrl.describe(`${OIDC_ENV.publicUrl}: the course's address as learners open it (the redirect URI is <it>/auth/callback)`),
    allowedEmailDomain: z.string().regex(/^[a-z0-9.-]+$/).nullable().describe(`${OIDC_ENV.allowedEmailDomain}: only verified emails of this domain may sign in`),
    allowedGroup: z.string().min(1).max(200).nullable().describe(`${OIDC_ENV.allowedGroup}: only members of this group (in the groups claim) may sign in`),
    groupsClaim: z.string().regex(/^[A-Za-z0-9_:./-]{1,100}$/).describe(`${OIDC_ENV.groupsClaim}: the ID token claim listing the user's groups (default groups)`),
    instructorEmails: z.array(z.string().email()).describe(`${OIDC_ENV.instructorEmails}: comma-separated emails of the class's instructors`),
    instructorGroup: z.string().min(1).max(200).nullable().describe(`${OIDC_ENV.instructorGroup}: the group whose members are instructors`),
  })
  .strict();

export type OidcConfig = z.infer<typeof oidcConfigSchema>;

/** The settings, or null when sign-in is off; a wrong setting is one line naming it. */
export function oidcConfigFromEnv(env: NodeJS.ProcessEnv, serverUrl: string): OidcConfig | null {
  const issuer = env[OIDC_ENV.issuer]?.trim();
  if (!issuer) return null;
  const parsed = oidcConfigSchema.safeParse({
    issuer,
    clientId: env[OIDC_ENV.clientId]?.trim() ?? '',
    clientSecret: env[OIDC_ENV.clientSecret] ?? '',
    publicUrl: (env[OIDC_ENV.publicUrl]?.trim() || serverUrl).replace(/\/+$/, ''),
    allowedEmailDomain: env[OIDC_ENV.allowedEmailDomain]?.trim().toLowerCase() || null,
    allowedGroup: env[OIDC_ENV.allowedGroup]?.trim() || null,
    groupsClaim: env[OIDC_ENV.groupsClaim]?.trim() || 'groups',
    instructorEmails: list(env[OIDC_ENV.instructorEmails]),
    instructorGroup: env[OIDC_ENV.instructorGroup]?.trim() || null,
  });
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = String(issue.path[0]) as keyof typeof OIDC_ENV;
  throw new KafkaIqError('INVALID_INPUT', `Sign-in is misconfigured: ${OIDC_ENV[field] ?? field} ${issue.message.toLowerCase()} (set it, or unset ${OIDC_ENV.issuer} to turn sign-in off).`);
}
