import { type Clock, systemClock, type TimerHandle } from '@svc/runtime';
import { sql } from 'drizzle-orm';
import { type CloudDb, robots } from '../db/index.js';

/** A robot's row as signalling needs it. */
export interface RobotKeyRow {
  readonly robotId: string;
  readonly orgId: string | null;
  readonly publicKey: string;
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
      .select({ robotId: robots.robotId, orgId: robots.orgId, publicKey: robots.publicKey })
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
