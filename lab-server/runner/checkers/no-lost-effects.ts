/** no-lost-effects: fails on an external effect some committed input asks for that never happened (effect-findings.ts counts the database rows or the lab API's effects). */
import type { Checker } from './contract.ts';
import { effectFindings } from './effect-findings.ts';

export const noLostEffects: Checker = (collected, history) => effectFindings(collected, history)?.get('no-lost-effects') ?? null;
