/**
 * The learner's session id, kept in localStorage: it names their namespace on the lab server and
 * their saved attempts. A module of its own, free of any schema library, because every lesson
 * page's sidebar reads it (its progress report) and a page loads at most 50 KB before its lab.
 */
const SESSION_KEY = 'kafkaiq:session';

export function sessionId(): string {
  let existing: string | null = null;
  try {
    existing = localStorage.getItem(SESSION_KEY);
  } catch {
    // Storage unavailable (privacy modes): a fresh id each time, the work is simply not kept.
  }
  if (existing && /^[A-Za-z0-9_-]{8,64}$/.test(existing)) return existing;
  const fresh = crypto.randomUUID();
  try {
    localStorage.setItem(SESSION_KEY, fresh);
  } catch {
    // As above: nothing to keep it in.
  }
  return fresh;
}
