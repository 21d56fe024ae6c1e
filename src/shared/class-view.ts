/**
 * The class view's contracts: the one thing a learner may tell about themselves (a display name,
 * optional) and what the instructor's page shows per learner. Nothing else about a learner is kept.
 */
import { z } from 'zod';

export const MAX_DISPLAY_NAME_CHARS = 40;
/** What a request may carry before normalising; anything longer is not a name. */
const MAX_RAW_CHARS = 200;

/**
 * The name as shown: Unicode NFKC (full-width and compatibility forms fold to their plain
 * letters), control and format characters (bidi overrides, zero-width joiners) removed, runs of
 * white space made one space.
 */
export function normaliseDisplayName(raw: string): string {
  return raw
    .normalize('NFKC')
    .replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/gu, '')
    .replace(/\s+/gu, ' ')
    .trim();
}

/** Letters that look like Latin ones in the scripts a Latin name is usually faked with. */
const LOOKALIKES: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', і: 'l', ї: 'l', ј: 'j', ѕ: 's', һ: 'h', ԁ: 'd', ԛ: 'q', ԝ: 'w', ӏ: 'l',
  α: 'a', β: 'b', ε: 'e', ζ: 'z', η: 'n', ι: 'l', κ: 'k', μ: 'u', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ϲ: 'c',
  '0': 'o', '1': 'l', i: 'l', '|': 'l',
};

/**
 * Two names with the same key look the same to an instructor: the key folds case, lookalike
 * letters (Cyrillic and Greek, 0/O, 1/l/I) and `rn`/`m`, `vv`/`w`, and ignores everything but
 * letters and digits ("Ada L." = "ada-l" = "АDA L").
 */
export function displayNameKey(name: string): string {
  const lower = normaliseDisplayName(name).toLowerCase().normalize('NFKC');
  let key = '';
  for (const c of lower.normalize('NFD')) {
    if (/\p{M}/u.test(c)) continue; // accents: "Adá" impersonates "Ada" as well as any letter does
    key += LOOKALIKES[c] ?? c;
  }
  return key.replace(/[^\p{L}\p{N}]/gu, '').replace(/rn/g, 'm').replace(/vv/g, 'w');
}

/** Latin mixed with Cyrillic or Greek (or those two mixed) is how a lookalike name is built. */
function mixesConfusableScripts(name: string): boolean {
  const scripts = [/\p{Script=Latin}/u, /\p{Script=Cyrillic}/u, /\p{Script=Greek}/u].filter((re) => re.test(name));
  return scripts.length > 1;
}

/** Names that would pass for the course's own voice or for another learner's anonymous label. */
function reserved(name: string): boolean {
  const key = displayNameKey(name);
  // Anywhere in the name: "Ada (learner 1a2b3c4d)" would pass for another learner's label.
  return /learner[0-9a-f]{8}/.test(name.toLowerCase().replace(/[^a-z0-9]+/g, '')) || ['lnstructor', 'teacher', 'admln', 'grader', 'kafkalq', 'anonymous', 'system'].includes(key);
}

export const displayNameSchema = z
  .string()
  .max(MAX_RAW_CHARS, { message: `a display name has at most ${MAX_DISPLAY_NAME_CHARS} characters` })
  .transform(normaliseDisplayName)
  .pipe(
    z
      .string()
      .min(1, { message: 'a display name needs at least one character' })
      .max(MAX_DISPLAY_NAME_CHARS, { message: `a display name has at most ${MAX_DISPLAY_NAME_CHARS} characters` })
      // Letters, digits, spaces and a few marks ("Ada (evening class)"): a name, not markup or control characters.
      .regex(/^[\p{L}\p{N} .'_()-]+$/u, { message: "a display name may use letters, digits, spaces and . ' _ - ( )" })
      .refine((name) => /[\p{L}\p{N}]/u.test(name), { message: 'a display name needs a letter or a digit' })
      .refine((name) => !mixesConfusableScripts(name), { message: 'a display name uses one alphabet: Latin, Cyrillic or Greek letters, not a mix' })
      .refine((name) => !reserved(name), { message: 'that name is reserved: choose your own' }),
  )
  .describe('What the instructor sees instead of an anonymous learner label');

export const displayNameRequestSchema = z
  .object({ displayName: displayNameSchema.nullable().describe('null forgets the name') })
  .strict();

export type DisplayNameRequest = z.infer<typeof displayNameRequestSchema>;
