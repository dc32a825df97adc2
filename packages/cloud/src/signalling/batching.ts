import { type Clock, systemClock, type TimerHandle } from '@svc/runtime';
import { sql } from 'drizzle-orm';
import { type AuditEntry, auditMany } from '../audit/index.js';
import { type CloudDb, type RobotDenialReason, robots } from '../db/index.js';

/** A robot's row as signalling needs it. */
export interface RobotKeyRow {
  readonly robotId: string;
  readonly orgId: string | null;
  readonly publicKey: string;
  /** When the last denial under its id was (cleared when it connects); `null` when none is kept. */
  readonly lastDenialAt: Date | null;
}

/** Options of {@link RobotKeyLoader}. */
export interface RobotKeyLoaderOptions {
  readonly db: CloudDb;
  /** How long to collect robot ids before one query when none is running, ms. Default 50. */
  readonly windowMs?: number;
  /** Most robot ids in one query; a full batch goes at once. Default 500. */
  readonly maxBatch?: number;
  /**
   * The window's timer. Default {@link systemClock}: the window is a batching delay, not a
   * deadline, so the signalling server leaves it on real time even when its own clock is fake.
   */
  readonly clock?: Clock;
}

interface Waiter {
  resolve(row: RobotKeyRow | undefined): void;
  reject(err: unknown): void;
}

/**
 * Looks robots up by id in batches: one `SELECT ... WHERE robot_id = ANY($1)` answers every id
 * asked for meanwhile, so a reconnect storm of 50 000 robots costs about a hundred statements
 * instead of 50 000.
 *
 * A batch goes when it holds `maxBatch` ids, else when the query before it has answered (or, when
 * none is running, `windowMs` after its first id). A statement costs about a millisecond of the
 * server's CPU whatever its size (PGlite runs in the server's own process), so the window is long
 * enough (50 ms, nothing next to a robot's reconnect backoff) to gather a storm's arrivals into
 * batches of about a hundred: a 3 ms window caught a dozen, and those statements were a fifth of
 * the storm's CPU. The ids travel as one array parameter, not one placeholder each, which costs a
 * third as much CPU to build, send and plan.
 */
export class RobotKeyLoader {
  private readonly db: CloudDb;
  private readonly windowMs: number;
  private readonly maxBatch: number;
  private readonly clock: Clock;
  private pending = new Map<string, Waiter[]>();
  private timer: TimerHandle | undefined;
  /** Queries sent and not yet answered. */
  private running = 0;

  constructor(options: RobotKeyLoaderOptions) {
    this.db = options.db;
    this.windowMs = options.windowMs ?? 50;
    this.maxBatch = options.maxBatch ?? 500;
    this.clock = options.clock ?? systemClock;
  }

  /** The robot's row, or `undefined` when no robot has this id. Rejects when the database fails. */
  load(robotId: string): Promise<RobotKeyRow | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.pending.get(robotId);
      if (waiters !== undefined) waiters.push({ resolve, reject });
      else this.pending.set(robotId, [{ resolve, reject }]);
      if (this.pending.size >= this.maxBatch) this.flush();
      else if (this.running === 0) this.timer ??= this.clock.setTimeout(() => this.flush(), this.windowMs);
      // Else the batch goes when the running query answers.
    });
  }

  /** Sends the collected ids now. */
  flush(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.running++;
    this.db
      .select({
        robotId: robots.robotId,
        orgId: robots.orgId,
        publicKey: robots.publicKey,
        lastDenialAt: robots.lastDenialAt,
      })
      .from(robots)
      .where(sql`${robots.robotId} = any(${sql.param([...batch.keys()])}::text[])`)
      .then(
        (rows) => {
          const found = new Map(rows.map((r) => [r.robotId, r]));
          for (const [id, waiters] of batch) for (const w of waiters) w.resolve(found.get(id));
        },
        (err: unknown) => {
          for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
        },
      )
      .finally(() => {
        this.running--;
        // The ids that came while this query ran have waited long enough: they go now.
        if (this.running === 0 && this.pending.size > 0) this.flush();
      });
  }

  /** Stops the timer; ids still waiting are looked up now. */
  close(): void {
    this.flush();
  }
}

/** Options of {@link LastSeenWriter}. */
export interface LastSeenWriterOptions {
  readonly db: CloudDb;
  /** Called when a write fails (the times are kept and tried again with the next flush). */
  readonly onError: (err: unknown, robots: number) => void;
}

/**
 * Collects `last_seen_at` times and writes them with one multi-row `UPDATE` per flush. A time only
 * moves forward: an older one never overwrites a newer one written by another node.
 */
export class LastSeenWriter {
  private readonly db: CloudDb;
  private readonly onError: LastSeenWriterOptions['onError'];
  private dirty = new Map<string, number>();
  private writing: Promise<void> | undefined;

  constructor(options: LastSeenWriterOptions) {
    this.db = options.db;
    this.onError = options.onError;
  }

  /** Queues `atMs` as the robot's last-seen time. */
  queue(robotId: string, atMs: number): void {
    const previous = this.dirty.get(robotId);
    if (previous === undefined || previous < atMs) this.dirty.set(robotId, atMs);
  }

  /** Robots waiting to be written. */
  get size(): number {
    return this.dirty.size;
  }

  /**
   * Writes everything queued in one statement. At most one write runs at a time; a flush while one
   * runs waits for it and then writes what has come since.
   */
  async flush(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    if (this.dirty.size === 0) return;
    const batch = this.dirty;
    this.dirty = new Map();
    const rows = [...batch].map(([id, at]) => ({ id, at: new Date(at).toISOString() }));
    this.writing = this.db
      .execute(
        sql`update ${robots} set last_seen_at = v.at
            from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(id text, at timestamptz)
            where ${robots.robotId} = v.id
              and (${robots.lastSeenAt} is null or ${robots.lastSeenAt} < v.at)`,
      )
      .then(
        () => undefined,
        (err: unknown) => {
          for (const [id, at] of batch) this.queue(id, at);
          this.onError(err, batch.size);
        },
      )
      .finally(() => {
        this.writing = undefined;
      });
    await this.writing;
  }
}

/** The audit action of a signalling denial under a known robot's id (actor: the robot). */
export const ROBOT_DENY_AUDIT = 'robot.deny';

/** What {@link DenialWriter} will write for one robot: a denial, or the clearing of one. */
type DenialChange =
  | { readonly kind: 'denied'; readonly reason: RobotDenialReason; readonly atMs: number }
  | { readonly kind: 'cleared'; readonly atMs: number };

/** Options of {@link DenialWriter}. */
export interface DenialWriterOptions {
  readonly db: CloudDb;
  /** Called when a write fails (the changes are kept and tried again with the next flush). */
  readonly onError: (err: unknown, robots: number) => void;
  /** Called with the robots whose row changed, once the change is committed. */
  readonly onWritten: (robotIds: readonly string[]) => void;
  /** How long after the first change a write goes, ms. Default 100. */
  readonly delayMs?: number;
  /**
   * The delay's timer. Default {@link systemClock}: a batching delay, not a deadline (as for
   * {@link RobotKeyLoader}).
   */
  readonly clock?: Clock;
}

/**
 * Remembers signalling denials of known robots in `robots.last_denial_reason` and
 * `last_denial_at`, and clears them when the robot next proves its key. Changes are collected for
 * `delayMs` and written in one statement each way (a fleet retrying with a wrong key costs a
 * statement per batch, not per attempt); for each robot the newest change wins. A denial is
 * audited (`robot.deny`, actor: the robot) when it is the first since the robot last connected or
 * its reason differs from the one kept, so someone retrying under a robot's id cannot fill the log.
 */
export class DenialWriter {
  readonly #db: CloudDb;
  readonly #onError: DenialWriterOptions['onError'];
  readonly #onWritten: DenialWriterOptions['onWritten'];
  readonly #delayMs: number;
  readonly #clock: Clock;
  #pending = new Map<string, DenialChange>();
  /** Robots whose denial this process wrote and has not cleared since. */
  readonly #kept = new Set<string>();
  #timer: TimerHandle | undefined;
  #writing: Promise<void> | undefined;

  constructor(options: DenialWriterOptions) {
    this.#db = options.db;
    this.#onError = options.onError;
    this.#onWritten = options.onWritten;
    this.#delayMs = options.delayMs ?? 100;
    this.#clock = options.clock ?? systemClock;
  }

  /** A connection under the known robot `robotId` was denied at `atMs` (ms since the epoch). */
  denied(robotId: string, reason: RobotDenialReason, atMs: number): void {
    this.#queue(robotId, { kind: 'denied', reason, atMs });
  }

  /**
   * The robot proved its key at `atMs`: a denial kept from before is cleared. `hadDenial` is what
   * its row said when it was looked up; a denial this process queued or wrote since is known here.
   */
  connected(robotId: string, atMs: number, hadDenial: boolean): void {
    if (!hadDenial && !this.#kept.has(robotId) && this.#pending.get(robotId)?.kind !== 'denied') return;
    this.#queue(robotId, { kind: 'cleared', atMs });
  }

  /** Robots with a change waiting to be written. */
  get size(): number {
    return this.#pending.size;
  }

  /** Writes what is queued now (and waits for a write under way). */
  async flush(): Promise<void> {
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#writing !== undefined) await this.#writing;
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    this.#writing = this.#write(batch)
      .then(
        (written) => {
          if (written.length > 0) this.#onWritten(written);
        },
        (err: unknown) => {
          for (const [robotId, change] of batch) this.#queue(robotId, change, false);
          this.#onError(err, batch.size);
        },
      )
      .finally(() => {
        this.#writing = undefined;
      });
    await this.#writing;
  }

  /** Stops the timer and writes what is left. */
  close(): Promise<void> {
    return this.flush();
  }

  #queue(robotId: string, change: DenialChange, schedule = true): void {
    const previous = this.#pending.get(robotId);
    if (previous === undefined || previous.atMs <= change.atMs) this.#pending.set(robotId, change);
    if (schedule && this.#timer === undefined) {
      this.#timer = this.#clock.setTimeout(() => {
        this.#timer = undefined;
        void this.flush();
      }, this.#delayMs);
    }
  }

  /** Writes one batch in a transaction; returns the robots whose row changed. */
  async #write(batch: ReadonlyMap<string, DenialChange>): Promise<string[]> {
    const denials: { id: string; reason: string; at: string }[] = [];
    const clears: { id: string; at: string }[] = [];
    for (const [id, change] of batch) {
      const at = new Date(change.atMs).toISOString();
      if (change.kind === 'denied') denials.push({ id, reason: change.reason, at });
      else clears.push({ id, at });
    }
    const written: string[] = [];
    await this.#db.transaction(async (tx) => {
      if (denials.length > 0) {
        // `old` reads the rows as they were before this statement: the reason being replaced.
        const result = await tx.execute(sql`with v as (
            select * from jsonb_to_recordset(${JSON.stringify(denials)}::jsonb) as v(id text, reason text, at timestamptz)
          ), old as (
            select r.robot_id, r.last_denial_reason from ${robots} r join v on v.id = r.robot_id
          )
          update ${robots} r set last_denial_reason = v.reason, last_denial_at = v.at
          from v join old on old.robot_id = v.id
          where r.robot_id = v.id and (r.last_denial_at is null or r.last_denial_at < v.at)
          returning r.robot_id, r.org_id, old.last_denial_reason as previous, v.reason, v.at`);
        const rows = rowsOf<{
          robot_id: string;
          org_id: string | null;
          previous: string | null;
          reason: string;
          at: string | Date;
        }>(result);
        const entries: AuditEntry[] = [];
        for (const row of rows) {
          written.push(row.robot_id);
          if (row.previous === row.reason) continue;
          entries.push({
            orgId: row.org_id,
            actor: { kind: 'robot', id: row.robot_id },
            action: ROBOT_DENY_AUDIT,
            targetKind: 'robot',
            targetId: row.robot_id,
            detail: { reason: row.reason },
            at: new Date(row.at),
          });
        }
        await auditMany(tx, entries);
      }
      if (clears.length > 0) {
        const result = await tx.execute(sql`update ${robots} r
          set last_denial_reason = null, last_denial_at = null
          from jsonb_to_recordset(${JSON.stringify(clears)}::jsonb) as v(id text, at timestamptz)
          where r.robot_id = v.id and r.last_denial_at <= v.at
          returning r.robot_id`);
        for (const row of rowsOf<{ robot_id: string }>(result)) written.push(row.robot_id);
      }
    });
    for (const [id, change] of batch) {
      if (change.kind === 'denied') this.#kept.add(id);
      else this.#kept.delete(id);
    }
    return written;
  }
}

/** The rows of a raw `execute()` result: node-postgres and PGlite both answer `{ rows }`. */
function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}
