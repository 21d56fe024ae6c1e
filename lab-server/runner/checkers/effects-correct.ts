/** effects-correct: fails on an external effect that does not hold what its input says (effect-findings.ts counts the database rows or the lab API's effects). */
import type { Checker } from './contract.ts';
import { effectFindings } from './effect-findings.ts';

export const effectsCorrect: Checker = (collected, history) => effectFindings(collected, history)?.get('effects-correct') ?? null;
