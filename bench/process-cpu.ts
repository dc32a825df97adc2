/**
 * CPU time of the bench process and everything it started (svc-cloud, Chromium's processes, robot
 * fleets), by role, read from `/proc` (Linux): says which process a measured time was spent in.
 */
import { readdir, readFile } from 'node:fs/promises';

/** The role of a process, from its command line. */
export type ProcessRole =
  | 'bench'
  | 'svc-cloud'
  | 'chromium renderers'
  | 'chromium gpu'
  | 'chromium other'
  | 'robot fleet'
  | 'other';

/** User plus system CPU seconds by role. */
export type CpuByRole = Partial<Record<ProcessRole, number>>;

interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  readonly cpuSeconds: number;
}

/** `/proc/<pid>/stat` of `pid` (fields after the command name, which may hold spaces). */
async function procStat(pid: number): Promise<ProcStat | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Clock ticks of 10 ms: utime and stime are fields 14 and 15 of the whole line.
    return { pid, ppid: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100 };
  } catch {
    return undefined; // the process ended meanwhile
  }
}

function roleOf(pid: number, root: number, commandLine: string): ProcessRole {
  if (pid === root) return 'bench';
  if (commandLine.includes('cloud/src/cli.ts')) return 'svc-cloud';
  if (commandLine.includes('signal-robots.ts')) return 'robot fleet';
  if (commandLine.includes('chromium')) {
    if (commandLine.includes('--type=renderer')) return 'chromium renderers';
    if (commandLine.includes('--type=gpu-process')) return 'chromium gpu';
    return 'chromium other';
  }
  return 'other';
}

/** CPU seconds used so far by `root` (default: this process) and all its descendants, by role. */
export async function cpuByRole(root = process.pid): Promise<CpuByRole> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  const stats = (await Promise.all(pids.map(procStat))).filter((s): s is ProcStat => s !== undefined);
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const out: CpuByRole = {};
  const rootStat = stats.find((s) => s.pid === root);
  const queue = rootStat === undefined ? [] : [rootStat];
  for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
    queue.push(...(children.get(s.pid) ?? []));
    const commandLine = await readFile(`/proc/${s.pid}/cmdline`, 'utf8').catch(() => '');
    const role = roleOf(s.pid, root, commandLine.replaceAll('\0', ' '));
    out[role] = (out[role] ?? 0) + s.cpuSeconds;
  }
  return out;
}

/** `after - before` by role, seconds rounded to 10 ms (a process that ended is left out). */
export function cpuDelta(before: CpuByRole, after: CpuByRole): CpuByRole {
  const out: CpuByRole = {};
  for (const [role, seconds] of Object.entries(after) as [ProcessRole, number][]) {
    out[role] = Math.round((seconds - (before[role] ?? 0)) * 100) / 100;
  }
  return out;
}
