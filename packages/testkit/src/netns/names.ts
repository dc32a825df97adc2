import { randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mustRun, runCommand, waitUntil } from './commands.js';

/** Every namespace the kit creates starts with this, so leftovers can be found and removed. */
export const NAMESPACE_PREFIX = 'svct-';

/** The namespaces of a topology: three always, the pilot's two when it has a pilot side. */
export type Role = 'internet' | 'router' | 'robot' | 'pilot-router' | 'pilot';

/** The roles every topology has, in creation order. */
export const ROLES: readonly Role[] = ['internet', 'router', 'robot'];

/** The roles of a topology's pilot side (a NAT router in front of the pilot), in creation order. */
export const PILOT_ROLES: readonly Role[] = ['pilot-router', 'pilot'];

/** `svct-<pid>-<4 random base-36 characters>-<role>`. */
const NAME_PATTERN = /^svct-(\d+)-[0-9a-z]{4}-(?:internet|router|robot|pilot-router|pilot)$/;

/** A topology's temporary directory: `svct-<pid>-<random>-<mkdtemp suffix>` in the system's. */
const TEMP_DIR_PATTERN = /^svct-(\d+)-[0-9a-z]{4}-/;

/** A fresh tag for one topology: the owner's pid and four random characters. */
export function newTag(pid: number = process.pid): string {
  const random = Array.from(randomBytes(4), (byte) => (byte % 36).toString(36)).join('');
  return `${pid}-${random}`;
}

/** The namespace name of one role of the topology with this tag. */
export function namespaceName(tag: string, role: Role): string {
  return `${NAMESPACE_PREFIX}${tag}-${role}`;
}

/** The pid that created a namespace of the kit, or undefined for any other name. */
export function ownerPid(namespace: string): number | undefined {
  const match = NAME_PATTERN.exec(namespace);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/** Whether a process with this pid exists (EPERM means it does, owned by someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The names in `ip netns list` ("name" or "name (id: 3)" per line). */
export async function listNamespaces(ip: string): Promise<string[]> {
  const out = await mustRun(ip, ['netns', 'list']);
  return out
    .split('\n')
    .map((line) => line.trim().split(' ')[0] ?? '')
    .filter((name) => name !== '');
}

/** The pids of the processes that run inside a namespace. */
export async function namespacePids(ip: string, namespace: string): Promise<number[]> {
  const result = await runCommand(ip, ['netns', 'pids', namespace]);
  // A namespace that is already gone has no processes.
  if (result.code !== 0) return [];
  return result.stdout
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 0 && pid !== process.pid);
}

/**
 * Kills every process inside a namespace (SIGKILL) and waits until none is left. Only the
 * kit's own namespaces are passed here, so only processes the tests started are killed.
 */
export async function killNamespaceProcesses(ip: string, namespace: string, timeoutMs = 5000): Promise<void> {
  await waitUntil(
    `no process is left in ${namespace}`,
    async () => {
      const pids = await namespacePids(ip, namespace);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // ended meanwhile
        }
      }
      return pids.length === 0;
    },
    timeoutMs,
  );
}

/**
 * Deletes the namespaces of earlier runs whose owner process has ended (a crashed or killed
 * test), with the processes still inside them, and their temporary directories. Deleting a
 * namespace also deletes its veths, and so their peers in the root namespace.
 *
 * @returns The namespace names deleted.
 */
export async function removeLeftovers(ip: string): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await listNamespaces(ip)) {
    const pid = ownerPid(name);
    if (pid === undefined || processAlive(pid)) continue;
    await killNamespaceProcesses(ip, name);
    const result = await runCommand(ip, ['netns', 'delete', name]);
    // Another run may have removed it at the same moment.
    if (result.code === 0) removed.push(name);
  }
  for (const entry of await readdir(tmpdir())) {
    const pid = TEMP_DIR_PATTERN.exec(entry)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) {
      await rm(join(tmpdir(), entry), { recursive: true, force: true });
    }
  }
  return removed;
}
