/**
 * Everything the workbench keeps in localStorage. Keys are shared with the rest of the site
 * (the course overview reads `kafkaiq:progress`), so their shapes must not change.
 */

import { kafkaClientSchema, type KafkaClient } from '../../shared/clients.ts';

const PROGRESS_KEY = 'kafkaiq:progress';
const codeKey = (slot: string) => `kafkaiq:code:${slot}`;
const clientKey = (labId: string) => `kafkaiq:client:${labId}`;

/**
 * Where a lab's program is saved for a client: kafkajs keeps the lab id (what earlier versions
 * saved), another client adds its id, so switching clients never overwrites the other program.
 */
export function codeSlot(labId: string, client: KafkaClient): string {
  return client === 'kafkajs' ? labId : `${labId}:${client}`;
}

/** The client the learner picked for a lab (kafkajs until they pick another). */
export function savedClient(labId: string): KafkaClient {
  const value = kafkaClientSchema.safeParse(read(clientKey(labId)));
  return value.success ? value.data : 'kafkajs';
}

export function saveClient(labId: string, client: KafkaClient): void {
  write(clientKey(labId), client === 'kafkajs' ? null : client);
}

/** Storage can be unavailable (privacy modes, quota): the workbench still works, it just forgets. */
function read(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function write(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // Quota or privacy mode: nothing useful to do.
  }
}

export { sessionId } from './session-id.ts';

export function savedCode(slot: string): string | null {
  return read(codeKey(slot));
}

export function saveCode(slot: string, code: string | null): void {
  write(codeKey(slot), code);
}

export type PassedLabs = Record<string, string>;

export function passedLabs(): PassedLabs {
  try {
    const value = JSON.parse(read(PROGRESS_KEY) ?? '{}') as { passed?: unknown };
    return value && typeof value.passed === 'object' && value.passed !== null ? (value.passed as PassedLabs) : {};
  } catch {
    return {};
  }
}

/** Adds passes (lab id -> ISO date); a lab keeps the date it was first passed. */
export function recordPasses(passes: PassedLabs): void {
  const current = passedLabs();
  let changed = false;
  for (const [lab, at] of Object.entries(passes)) {
    if (current[lab]) continue;
    current[lab] = at;
    changed = true;
  }
  if (!changed) return;
  write(PROGRESS_KEY, JSON.stringify({ passed: current }));
  // The sidebar's badges (overrides/Sidebar.astro) listen: storage events reach other tabs only.
  dispatchEvent(new Event('kafkaiq:progress-saved'));
}
