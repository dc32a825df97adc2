import { sql } from 'drizzle-orm';
import type { ActorKind, CloudDb } from '../db/index.js';
import { auditLog } from '../db/index.js';

/** Who did something: a user, an API key, a robot, or the service itself. */
export interface Actor {
  readonly kind: ActorKind;
  readonly id: string | null;
}

/** The service itself (provisioning decisions, expiry). */
export const SYSTEM_ACTOR: Actor = { kind: 'system', id: null };

/** One audit entry to write. */
export interface AuditEntry {
  readonly orgId: string | null;
  readonly actor: Actor;
  /** Dotted `noun.verb`, e.g. `membership.update`. */
  readonly action: string;
  readonly targetKind?: string;
  readonly targetId?: string;
  /** What changed; never a secret. */
  readonly detail?: Record<string, unknown>;
  /** When it happened; default: when the row is written. {@link AuditBatcher} sets it on enqueue. */
  readonly at?: Date;
}

/** Appends entries to the audit log (inside the caller's transaction when given one). */
export async function audit(db: CloudDb, ...entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db.insert(auditLog).values(entries.map(auditRow));
}

function auditRow(e: AuditEntry): typeof auditLog.$inferInsert {
  return {
    orgId: e.orgId,
    actorKind: e.actor.kind,
    actorId: e.actor.id,
    action: e.action,
    targetKind: e.targetKind ?? null,
    targetId: e.targetId ?? null,
    detail: e.detail ?? {},
    ...(e.at === undefined ? {} : { at: e.at }),
  };
}

/**
 * Appends many entries in one statement whose only parameter is the entries as JSON. Much cheaper
 * per row than a multi-row `VALUES` list with eight parameters a row, on PGlite above all.
 */
export async function auditMany(db: CloudDb, entries: readonly AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const now = new Date().toISOString();
  const rows = entries.map((e) => ({
    org_id: e.orgId,
    actor_kind: e.actor.kind,
    actor_id: e.actor.id,
    action: e.action,
    target_kind: e.targetKind ?? null,
    target_id: e.targetId ?? null,
    detail: e.detail ?? {},
    at: e.at?.toISOString() ?? now,
  }));
  await db.execute(sql`insert into ${auditLog} (org_id, actor_kind, actor_id, action, target_kind, target_id, detail, at)
    select org_id, actor_kind, actor_id, action, target_kind, target_id, detail, at
    from rows from (jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      as (org_id uuid, actor_kind text, actor_id text, action text, target_kind text, target_id text, detail jsonb, at timestamptz))
      with ordinality as x(org_id, actor_kind, actor_id, action, target_kind, target_id, detail, at, n)
    order by n`);
}

/** Where an {@link AuditBatcher} reports failed writes (pino's logger fits). */
export interface AuditBatcherLog {
  error(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link AuditBatcher}. */
export interface AuditBatcherOptions {
  readonly db: CloudDb;
  /** Default: failures go to stderr. */
  readonly log?: AuditBatcherLog;
  /** Longest an entry waits before its batch is written, ms. Default 100. */
  readonly maxDelayMs?: number;
  /** Entries per INSERT; a full batch is written at once. Default 500. */
  readonly maxBatch?: number;
  /** Wait after a failed write before the next attempt, ms. Default 1000. */
  readonly retryDelayMs?: number;
  /** The time stamped on an entry that has none. Default: the wall clock. */
  readonly now?: () => Date;
}

const STDERR_LOG: AuditBatcherLog = {
  error: (fields, message) => console.error(`svc-cloud: ${message}`, fields),
};

/**
 * Writes audit entries in batches, for hot paths that must not run SQL per request (the mint of
 * pilot session tokens): entries are queued with the time they happened, and written in one
 * multi-row INSERT at most {@link AuditBatcherOptions.maxDelayMs} later or as soon as
 * {@link AuditBatcherOptions.maxBatch} are queued. A failed write is logged and retried with the
 * same entries, so none is lost while the process runs; {@link AuditBatcher.close} writes what is
 * left. Readers that must see an entry call {@link AuditBatcher.flush} first.
 */
export class AuditBatcher {
  readonly #db: CloudDb;
  readonly #log: AuditBatcherLog;
  readonly #maxDelayMs: number;
  readonly #maxBatch: number;
  readonly #retryDelayMs: number;
  readonly #now: () => Date;
  #queue: AuditEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  /** A write failed and its retry is scheduled: a full queue waits for it too. */
  #backingOff = false;
  #closed = false;

  constructor(options: AuditBatcherOptions) {
    this.#db = options.db;
    this.#log = options.log ?? STDERR_LOG;
    this.#maxDelayMs = options.maxDelayMs ?? 100;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#retryDelayMs = options.retryDelayMs ?? 1000;
    this.#now = options.now ?? (() => new Date());
    if (!Number.isInteger(this.#maxBatch) || this.#maxBatch < 1) {
      throw new TypeError(`AuditBatcher option maxBatch: expected a positive integer, got ${this.#maxBatch}`);
    }
  }

  /** Entries queued and not yet written. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Queues entries; each keeps its `at`, or gets the current time. */
  enqueue(...entries: AuditEntry[]): void {
    if (this.#closed) throw new TypeError('AuditBatcher.enqueue: the batcher is closed');
    for (const entry of entries)
      this.#queue.push(entry.at === undefined ? { ...entry, at: this.#now() } : entry);
    if (this.#queue.length >= this.#maxBatch) this.#writeSoon(0);
    else this.#writeSoon(this.#maxDelayMs);
  }

  /**
   * Writes every entry queued so far (and waits for a write under way).
   *
   * @throws The database's error when a batch cannot be written; its entries stay queued.
   */
  async flush(): Promise<void> {
    for (;;) {
      if (this.#writing !== undefined) {
        await this.#writing;
        continue;
      }
      if (this.#queue.length === 0) return;
      await this.#write();
    }
  }

  /** Writes what is left and stops; entries that still cannot be written are logged as lost. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#clearTimer();
    try {
      await this.flush();
    } catch (err) {
      this.#log.error(
        { err, lost: this.#queue.length },
        'writing the last audit entries failed while closing; they are lost',
      );
    }
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Schedules a write in `delayMs` unless one is scheduled sooner or under way. */
  #writeSoon(delayMs: number): void {
    if (this.#writing !== undefined) return; // the write under way schedules the next
    if (this.#timer !== undefined && (delayMs > 0 || this.#backingOff)) return;
    this.#clearTimer();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#backingOff = false;
      this.#write().catch(() => {
        // Logged in #write; the entries stay queued and a retry is scheduled.
      });
    }, delayMs);
    this.#timer.unref();
  }

  /** Writes one batch from the head of the queue. */
  #write(): Promise<void> {
    this.#clearTimer();
    this.#backingOff = false;
    const batch = this.#queue.splice(0, this.#maxBatch);
    if (batch.length === 0) return Promise.resolve();
    const writing = auditMany(this.#db, batch).then(
      () => {
        this.#writing = undefined;
        if (this.#queue.length >= this.#maxBatch) this.#writeSoon(0);
        else if (this.#queue.length > 0) this.#writeSoon(this.#maxDelayMs);
      },
      (err: unknown) => {
        this.#writing = undefined;
        // Back to the head of the queue, in their order, to be retried.
        this.#queue = [...batch, ...this.#queue];
        this.#log.error(
          { err, entries: batch.length, queued: this.#queue.length },
          `writing audit entries failed; retrying in ${this.#retryDelayMs} ms`,
        );
        if (!this.#closed) {
          this.#writeSoon(this.#retryDelayMs);
          this.#backingOff = true;
        }
        throw err;
      },
    );
    this.#writing = writing.catch(() => {});
    return writing;
  }
}
