/**
 * The CPU time the whole machine spent (every process: the broker, the lab server, the programs),
 * in core-seconds, read from /proc/stat: what a grade costs a class, whoever spends it.
 */
import fs from 'node:fs';

/** USER_HZ: the unit of /proc/stat on Linux (sysconf(_SC_CLK_TCK), 100 on every mainstream kernel). */
const TICKS_PER_SECOND = 100;

/** Busy core-seconds since boot (user, nice, system, irq, softirq, steal), or null off Linux. */
export function machineCpuSeconds(): number | null {
  let stat: string;
  try {
    stat = fs.readFileSync('/proc/stat', 'utf8');
  } catch {
    return null; // not Linux: the bench prints no CPU figure
  }
  const fields = stat.split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) / TICKS_PER_SECOND;
}

/** User + system core-seconds one process has spent so far (/proc/<pid>/stat), or NaN when it is gone or off Linux. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces: utime, stime are 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN; // the figure prints as NaN: no process to read
  }
}
