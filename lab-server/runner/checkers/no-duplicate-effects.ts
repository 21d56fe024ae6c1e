/** no-duplicate-effects: fails on the same external effect applied more than once (effect-findings.ts counts the database rows or the lab API's effects). */
import type { Checker } from './contract.ts';
import { effectFindings } from './effect-findings.ts';

export const noDuplicateEffects: Checker = (collected, history) => effectFindings(collected, history)?.get('no-duplicate-effects') ?? null;
