/**
 * The perimeter's pieces without a server: the origin list, local redirects, the instructor
 * session's signature and expiry, display-name keys, and the per-learner quotas and rates.
 * (tests/security/tenancy-perimeter.test.ts attacks a real server with the same rules.)
 */
import { describe, expect, it } from 'vitest';
import { InstructorSessions, SESSION_TTL_MS } from '../../lab-server/server/instructor-session.ts';
import { KeyedRate, LearnerQuotas } from '../../lab-server/server/learner-quotas.ts';
import { localLocation, originsFromEnv } from '../../lab-server/server/perimeter.ts';
import { displayNameKey, displayNameSchema } from '../../src/shared/class-view.ts';

describe('KAFKAIQ_ORIGINS', () => {
  it('takes origins and refuses anything else in one line naming the form', () => {
    expect(originsFromEnv({ KAFKAIQ_ORIGINS: 'https://Kafka.Example.edu, http://10.0.0.5:4321/' })).toEqual(['https://kafka.example.edu', 'http://10.0.0.5:4321']);
    expect(originsFromEnv({})).toEqual([]);
    for (const bad of ['kafka.example.edu', 'https://x.example/path', 'ftp://x.example', 'https://user@x.example', 'https://x.example?q', '*']) {
      expect(() => originsFromEnv({ KAFKAIQ_ORIGINS: bad }), bad).toThrow(/write it as https:\/\/host/);
    }
  });
});

describe('localLocation', () => {
  it('keeps local paths and turns anything that leaves the server into /', () => {
    expect(localLocation('/10-1/')).toBe('/10-1/');
    expect(localLocation('//evil.example/')).toBe('/evil.example/');
    for (const bad of ['/\\evil.example', 'https://evil.example/', 'evil', '/\tx', '/\u0000']) expect(localLocation(bad), bad).toBe('/');
  });
});

describe('instructor sessions', () => {
  it('accept what they signed until it expires, and nothing else', () => {
    let now = 1_000_000;
    const sessions = new InstructorSessions('a-token-of-sixteen-chars', () => now);
    const value = sessions.issue();
    expect(value).not.toContain('a-token');
    expect(sessions.valid(value)).toBe(true);
    expect(new InstructorSessions('another-token-sixteen', () => now).valid(value)).toBe(false);
    const [v, expires, nonce, mac] = value.split('.');
    expect(sessions.valid(`${v}.${Number(expires) + 1}.${nonce}.${mac}`)).toBe(false);
    expect(sessions.valid(undefined)).toBe(false);
    now += SESSION_TTL_MS + 1;
    expect(sessions.valid(value)).toBe(false);
  });
});

describe('display names', () => {
  it('fold lookalikes to one key and refuse mixed alphabets and reserved names', () => {
    expect(new Set(['Ada L.', 'ada-l', 'Ａｄａ　Ｌ', 'ADA l', 'Adá L'].map(displayNameKey))).toEqual(new Set(['adal']));
    expect(displayNameKey('AIan')).toBe(displayNameKey('Alan'));
    expect(displayNameKey('Ӏoрez')).toBe(displayNameKey('lopez'));
    expect(displayNameSchema.safeParse('Аda').success).toBe(false); // Cyrillic А with Latin
    expect(displayNameSchema.safeParse('learner 12ab34cd').success).toBe(false);
    expect(displayNameSchema.parse('Ada\u202e\u0007 L')).toBe('Ada L');
    expect(displayNameSchema.parse('李雷')).toBe('李雷');
  });
});

describe('per-learner quotas', () => {
  it('count each learner apart and give slots back once', () => {
    const quotas = new LearnerQuotas({ runs: 1, grades: 2 });
    const a = quotas.take('10.0.0.1', 'grade');
    quotas.take('10.0.0.1', 'grade');
    expect(() => quotas.take('10.0.0.1', 'grade')).toThrow(/2 grades/);
    quotas.take('10.0.0.2', 'grade');
    a();
    a();
    expect(quotas.holding('10.0.0.1').grade).toBe(1);
    quotas.take('10.0.0.1', 'grade');
    expect(() => quotas.take('10.0.0.1', 'grade')).toThrow(/LIMIT|at once/);
  });

  it('rate keys stay bounded and refill', () => {
    let now = 0;
    const rate = new KeyedRate(2, 6, 3, () => now);
    expect([rate.take('a'), rate.take('a'), rate.take('a')]).toEqual([0, 0, 10]);
    now += 10_000;
    expect(rate.take('a')).toBe(0);
    for (const k of ['b', 'c', 'd', 'e']) rate.take(k);
    expect(rate.take('a')).toBe(0); // forgotten past 3 keys: only its budget came back
  });
});
