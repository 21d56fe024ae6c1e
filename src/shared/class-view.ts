/**
 * The class view's contracts: the one thing a learner may tell about themselves (a display name,
 * optional) and what the instructor's page shows per learner. Nothing else about a learner is kept.
 */
import { z } from 'zod';

export const MAX_DISPLAY_NAME_CHARS = 40;

export const displayNameSchema = z
  .string()
  .trim()
  .min(1, { message: 'a display name needs at least one character' })
  .max(MAX_DISPLAY_NAME_CHARS, { message: `a display name has at most ${MAX_DISPLAY_NAME_CHARS} characters` })
  // Letters, digits, spaces and a few marks: a name, not markup or control characters.
  .regex(/^[\p{L}\p{N} .'_-]+$/u, { message: "a display name may use letters, digits, spaces and . ' _ -" })
  .describe('What the instructor sees instead of an anonymous learner label');

export const displayNameRequestSchema = z
  .object({ displayName: displayNameSchema.nullable().describe('null forgets the name') })
  .strict();

export type DisplayNameRequest = z.infer<typeof displayNameRequestSchema>;
