/**
 * Everything the workbench keeps in localStorage. Keys are shared with the rest of the site
 * (the course overview reads `kafkaiq:progress`), so their shapes must not change.
 */

const SESSION_KEY = 'kafkaiq:session';
const PROGRESS_KEY = 'kafkaiq:progress';
const codeKey = (labId: string) => `kafkaiq:code:${labId}`;

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

/** The learner's session id: names their namespace on the lab server and their saved attempts. */
export function sessionId(): string {
  const existing = read(SESSION_KEY);
  if (existing && /^[A-Za-z0-9_-]{8,64}$/.test(existing)) return existing;
  const fresh = crypto.randomUUID();
  write(SESSION_KEY, fresh);
  return fresh;
}

export function savedCode(labId: string): string | null {
  return read(codeKey(labId));
}

export function saveCode(labId: string, code: string | null): void {
  write(codeKey(labId), code);
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
