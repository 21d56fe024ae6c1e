/** Paths of the lab server's HTTP API that pages call, in a module without dependencies: every lesson page loads it. */
export const PROGRESS_PATH = '/api/progress';
