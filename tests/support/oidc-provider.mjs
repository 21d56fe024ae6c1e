/**
 * A real OpenID Provider for the sign-in tests, run as its own process: oidc-provider (a certified
 * implementation) with the signing key the test made for it, one confidential client, and its development
 * login page (any user name signs in; no password is checked). The account "teacher-…" is in the
 * instructors group; every account's email is <name>@<domain given>.
 *
 *   node oidc-provider.mjs <port> <client id> <client secret> <redirect uri> <email domain> <key.pem>
 *
 * Prints "ready <issuer>" once it listens.
 */
import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import Provider from 'oidc-provider';

const [port, clientId, clientSecret, redirectUri, domain, keyFile] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const privateKey = createPrivateKey(fs.readFileSync(keyFile, 'utf8'));

const provider = new Provider(issuer, {
  clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
  jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' }] },
  cookies: { keys: [`cookie-key-${port}-${Date.now()}`] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  // Every scope this course asks for is granted without a consent page's second click.
  loadExistingGrant: async (ctx) => {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
  findAccount: async (_ctx, id) => ({
    accountId: id,
    claims: async () => ({
      sub: id,
      email: `${id}@${domain}`,
      email_verified: true,
      name: id.replace(/-/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase()),
      groups: id.startsWith('teacher') ? ['instructors', 'class'] : ['class'],
    }),
  }),
});
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
provider.listen(Number(port), '127.0.0.1', () => console.log(`ready ${issuer}`));
