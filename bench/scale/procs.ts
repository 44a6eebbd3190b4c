/**
 * What the scale benchmark reads of its processes from Linux's /proc: each descendant of this process by kind
 * (Temporal server, MinIO, PostgreSQL, the workers by pid), its CPU time and its resident memory (now and peak).
 * The reading is I/O; `parseStat` and `kindOf` are pure.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

export interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** User + system CPU time, ms. */
  cpuMs: number;
}

/** A /proc/<pid>/stat line: the command sits in parentheses and may itself hold spaces and parentheses. */
export function parseStat(line: string): ProcStat {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  const fields = line.slice(close + 2).split(' ');
  // After the command: state(0) ppid(1) … utime(11) stime(12).
  return {
    pid: Number(line.slice(0, open).trim()),
    ppid: Number(fields[1]),
    comm: line.slice(open + 1, close),
    cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1_000) / TICKS_PER_SECOND,
  };
}

export type ProcKind = 'temporal' | 'minio' | 'postgres' | 'worker' | 'driver' | 'other';

/** What a process is, by its pid (the workers and this process are known) or its command name. */
export function kindOf(stat: ProcStat, workers: ReadonlySet<number>, self: number): ProcKind {
  if (stat.pid === self) return 'driver';
  if (workers.has(stat.pid)) return 'worker';
  if (/temporal/i.test(stat.comm)) return 'temporal';
  if (/minio/i.test(stat.comm)) return 'minio';
  if (/postgres|postmaster/i.test(stat.comm)) return 'postgres';
  return 'other';
}

function readStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined; // gone meanwhile
  }
}

/** Resident memory now and at its peak (VmRSS, VmHWM), in MB; undefined when the process is gone. */
export function memoryOf(pid: number): { rssMb: number; peakMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/**
 * Sets a process's peak resident memory (VmHWM) back to its resident memory now (Linux: "5" to
 * /proc/<pid>/clear_refs), so that the peak read later is the peak since now; false when it could not.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * What a memory reading says of the peak since {@link resetPeakRss}, MB, given VmHWM just after the reset
 * (`floorMb`; 0: never reset, VmHWM is the peak): VmHWM once it has risen above the floor; while it has not, the peak
 * since the reset was below the floor and the RSS now is what is known of it (the caller keeps the largest reading).
 */
export function peakSinceReset(memory: { rssMb: number; peakMb: number }, floorMb: number): number {
  return memory.peakMb > floorMb + 1 ? memory.peakMb : memory.rssMb;
}

/** This process and every process below it, with their kinds. */
export function descendants(workers: ReadonlySet<number>): (ProcStat & { kind: ProcKind })[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((stat): stat is ProcStat => stat !== undefined);
  const children = new Map<number, ProcStat[]>();
  for (const stat of all) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const self = readStat(process.pid);
  const found: (ProcStat & { kind: ProcKind })[] = [];
  const queue = self ? [self] : [];
  while (queue.length > 0) {
    const next = queue.shift()!;
    found.push({ ...next, kind: kindOf(next, workers, process.pid) });
    queue.push(...(children.get(next.pid) ?? []));
  }
  return found;
}
