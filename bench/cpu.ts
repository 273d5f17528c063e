// CPU time and memory of processes, read from /proc (Linux): unlike a rate, it leaves out what a shared machine's
// other guests take, so it says where a request's or a job's cost goes (the API, Postgres, a worker).

import fs from 'node:fs/promises';

/** Linux's USER_HZ, which /proc/<pid>/stat counts in. */
const CLOCK_TICKS = 100;

/** User + system CPU seconds of a process so far, or undefined where /proc cannot be read. */
export async function cpuSecondsOf(pid: number): Promise<number | undefined> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** The resident memory of a process (VmRSS), in MB, or undefined where /proc cannot be read. */
export async function rssMbOf(pid: number): Promise<number | undefined> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const kb = status && /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kb ? Number(kb) / 1024 : undefined;
}

/** User + system CPU seconds of each process named `command`, by pid, or undefined. */
export async function cpuSecondsByPid(command: string): Promise<Map<number, number> | undefined> {
  const pids = await fs.readdir('/proc').catch(() => undefined);
  if (!pids) return undefined;
  const seconds = new Map<number, number>();
  for (const pid of pids.filter((p) => /^\d+$/.test(p)).map(Number)) {
    const comm = await fs.readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    const cpu = comm.trim() === command ? await cpuSecondsOf(pid) : undefined;
    if (cpu !== undefined) seconds.set(pid, cpu);
  }
  return seconds;
}

/**
 * CPU seconds such processes spent between two readings: those started meanwhile count from zero, those
 * that ended meanwhile (a closed connection's backend) are left out.
 */
export function cpuSecondsBetween(before?: Map<number, number>, after?: Map<number, number>): number | undefined {
  if (!before || !after) return undefined;
  let total = 0;
  for (const [pid, cpu] of after) total += cpu - (before.get(pid) ?? 0);
  return total;
}
