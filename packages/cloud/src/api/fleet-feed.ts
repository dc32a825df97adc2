/**
 * The fleet's live view for the console: `GET /api/v1/orgs/{org}/fleet/events` subscribes here.
 * The feed keeps, for each org someone watches, its robots' records and grants; signalling tells
 * it when a robot's presence changes and the API when a robot's record, an org or a membership
 * changes. Changes are coalesced: robots are marked, and at most every `flushMs` each marked
 * robot's view is made once and written to every stream of its org (the newest state only), so a
 * fleet reconnecting at once costs one event per robot per flush per console, not one per message.
 * A change after a quiet spell (no flush for `flushMs`) is written at once, on the next turn of the
 * event loop: one robot coming online is not held back for the interval.
 */
import type { Clock, TimerHandle } from '@svc/runtime';
import type { CloudDb, RobotAccess } from '../db/index.js';
import type { RobotChange, SignallingHandle } from '../signalling/index.js';
import { ApiError } from './errors.js';
import {
  FLEET_FLUSH_MS,
  FLEET_HEARTBEAT_MS,
  FLEET_MAX_STREAMS_PER_USER,
  FLEET_RECHECK_MS,
  type FleetEndReason,
  type FleetEvent,
  type FleetRemovalReason,
  SSE_HEARTBEAT,
  sseEvent,
} from './fleet-events.js';
import {
  accessOf,
  type GrantFact,
  membershipsOf,
  orgsOfUser,
  readRobots,
  SerialReads,
} from './fleet-records.js';
import { driverUserId, type OrgPeople, type RobotRecord, robotView } from './robot-view.js';

// The decoration `buildApp` (app.ts) puts on the app: its fleet feed (tests call `recheck()`).
declare module 'fastify' {
  interface FastifyInstance {
    /** The fleet's live view behind `GET /api/v1/orgs/{org}/fleet/events`. */
    readonly fleet: FleetFeed;
  }
}

/** Where a stream's text goes: the HTTP response. */
export interface FleetSink {
  /** Writes server-sent-events text. */
  write(text: string): void;
  /** Writes the last text and ends the response. */
  end(text: string): void;
  /** Bytes written and not yet taken by the network (a client that does not read makes this grow). */
  readonly bufferedBytes: number;
}

/** Where the feed reports what goes wrong (pino's logger fits). */
export interface FleetFeedLog {
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link FleetFeed}. Times are ms. */
export interface FleetFeedOptions {
  readonly db: CloudDb;
  /** Presence on this node; without it every robot shows offline. */
  readonly signalling?: SignallingHandle;
  /** Drivers' names and emails. */
  readonly people: OrgPeople;
  /** Timers, and `wallNow()` for the access tokens' expiry. */
  readonly clock: Clock;
  readonly log: FleetFeedLog;
  /** Longest a change waits before it is written. Default {@link FLEET_FLUSH_MS}. */
  readonly flushMs?: number;
  /** Period of the heartbeat comment. Default {@link FLEET_HEARTBEAT_MS}. */
  readonly heartbeatMs?: number;
  /** Period of the membership check of every stream. Default {@link FLEET_RECHECK_MS}. */
  readonly recheckMs?: number;
  /** Streams one user may hold at once. Default {@link FLEET_MAX_STREAMS_PER_USER}. */
  readonly maxStreamsPerUser?: number;
  /** Bytes a stream may leave unread before it is ended (`too-slow`). Default 4 MiB. */
  readonly maxBufferedBytes?: number;
}

/** Who asks for a stream. */
export interface FleetRequest {
  readonly orgId: string;
  readonly userId: string;
  /** When the caller's credential expires, ms since the epoch: the stream ends then. */
  readonly expiresAtMs?: number | undefined;
}

/** An open stream: closed by its route when the client goes. */
export interface FleetSubscription {
  close(): void;
}

/** What the feed keeps of one robot of a watched org. */
interface RobotEntry {
  record: RobotRecord;
  grants: readonly GrantFact[];
  /** The JSON of its view (for a caller without grants) last written, to skip changes nobody would see. */
  lastSent: string | undefined;
}

/** One open stream. */
interface Subscriber {
  readonly orgId: string;
  readonly userId: string;
  /** The user's orgs, for grants to an org. */
  orgs: ReadonlySet<string>;
  readonly sink: FleetSink;
  expiry: TimerHandle | undefined;
  ended: boolean;
}

/** An org someone watches: its robots and streams, and what changed since the last flush. */
interface OrgWatch {
  readonly orgId: string;
  readonly robots: Map<string, RobotEntry>;
  readonly subscribers: Set<Subscriber>;
  /** Robots to write at the next flush: added, or changed (`force`: even if the view looks the same). */
  readonly dirty: Map<string, { added: boolean; force: boolean }>;
  readonly removed: Map<string, FleetRemovalReason>;
  /** Resolves once the robots are loaded (rejects when they could not be). */
  readonly ready: Promise<void>;
  /** Streams waiting for `ready`: the watch is kept while there are any. */
  waiting: number;
}

/**
 * The live fleet of each watched org, fed by signalling's presence changes
 * ({@link FleetFeed.handleSignal}) and by the API's changes ({@link FleetFeed.handleRobotsChanged},
 * {@link FleetFeed.handleMembershipRemoved}, {@link FleetFeed.handleOrgDeleted}), written to the
 * streams of {@link FleetFeed.subscribe}. Reads of the database run one at a time, in order, so a
 * change noticed while an org loads is read after the load.
 */
export class FleetFeed {
  readonly #db: CloudDb;
  readonly #signalling: SignallingHandle | undefined;
  readonly #people: OrgPeople;
  readonly #clock: Clock;
  readonly #log: FleetFeedLog;
  readonly #flushMs: number;
  /** When the last flush ran (monotonic ms); a change after `flushMs` of quiet is written at once. */
  #lastFlushAt = Number.NEGATIVE_INFINITY;
  readonly #maxStreams: number;
  readonly #maxBuffered: number;
  readonly #watches = new Map<string, OrgWatch>();
  /** Robot id to the watch holding it. */
  readonly #robotWatch = new Map<string, OrgWatch>();
  /** Streams (open or being opened) per user id. */
  readonly #streams = new Map<string, number>();
  /** Robots whose record must be read again. */
  #stale = new Set<string>();
  /** Drivers to look up, per org. */
  readonly #wanted = new Map<string, Set<string>>();
  /** The chain of database reads: each runs after the one before. */
  readonly #reads = new SerialReads();
  #flushTimer: TimerHandle | undefined;
  readonly #heartbeat: TimerHandle;
  readonly #recheck: TimerHandle;
  readonly #unlisten: () => void;
  #closed = false;

  constructor(options: FleetFeedOptions) {
    this.#db = options.db;
    this.#signalling = options.signalling;
    this.#people = options.people;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#flushMs = options.flushMs ?? FLEET_FLUSH_MS;
    this.#maxStreams = options.maxStreamsPerUser ?? FLEET_MAX_STREAMS_PER_USER;
    this.#maxBuffered = options.maxBufferedBytes ?? 4 * 1024 * 1024;
    this.#unlisten = this.#signalling?.onRobotChange((change) => this.handleSignal(change)) ?? (() => {});
    this.#heartbeat = this.#clock.setInterval(() => this.#beat(), options.heartbeatMs ?? FLEET_HEARTBEAT_MS);
    this.#recheck = this.#clock.setInterval(() => this.recheck(), options.recheckMs ?? FLEET_RECHECK_MS);
  }

  /** Streams open (or being opened) by `userId`. */
  streamsOf(userId: string): number {
    return this.#streams.get(userId) ?? 0;
  }

  /**
   * Opens a stream of `request.orgId` for a member (the route checked the membership): writes the
   * snapshot to `sink` before it resolves, then every change until it is closed or ended.
   *
   * @throws {ApiError} `rate-limited` when the user holds the most streams already.
   * @throws The database's error when the org's robots cannot be read (nothing was written).
   */
  async subscribe(request: FleetRequest, sink: FleetSink): Promise<FleetSubscription> {
    if (this.#closed) throw new ApiError('internal', 'the server is closing');
    const { orgId, userId } = request;
    const open = this.streamsOf(userId);
    if (open >= this.#maxStreams) {
      throw new ApiError(
        'rate-limited',
        `you already hold ${open} fleet streams (at most ${this.#maxStreams}); close one first`,
      );
    }
    this.#streams.set(userId, open + 1);
    const watch = this.#watch(orgId);
    watch.waiting++;
    let userOrgs: Set<string>;
    try {
      userOrgs = await this.#reads.run(() => orgsOfUser(this.#db, userId));
      await watch.ready;
      if (this.#closed) throw new ApiError('internal', 'the server is closing');
    } catch (err) {
      watch.waiting--;
      this.#release(userId);
      this.#dropIfUnwatched(watch);
      throw err;
    }
    watch.waiting--;
    const subscriber: Subscriber = { orgId, userId, orgs: userOrgs, sink, expiry: undefined, ended: false };
    watch.subscribers.add(subscriber);
    const views = [...watch.robots.values()]
      .sort((a, b) =>
        a.record.robotId < b.record.robotId ? -1 : a.record.robotId > b.record.robotId ? 1 : 0,
      )
      .map((entry) => this.#view(watch, entry, subscriber));
    sink.write(sseEvent('snapshot', JSON.stringify({ type: 'snapshot', orgId, robots: views })));
    if (request.expiresAtMs !== undefined) {
      const left = Math.max(0, request.expiresAtMs - this.#clock.wallNow());
      subscriber.expiry = this.#clock.setTimeout(
        () =>
          this.#end(subscriber, 'credential-expired', 'your access token expired: reconnect with a new one'),
        left,
      );
    }
    return { close: () => this.#remove(subscriber) };
  }

  // -------------------------------------------------------------------------------------------
  // Input

  /** A change from signalling: a robot's presence, or robots' records (a denial). */
  handleSignal(change: RobotChange): void {
    switch (change.kind) {
      case 'presence': {
        const watch = this.#robotWatch.get(change.robotId);
        const entry = watch?.robots.get(change.robotId);
        if (watch === undefined || entry === undefined) return;
        const seen = new Date(change.lastSeenAt);
        if (entry.record.lastSeenAt === null || entry.record.lastSeenAt < seen) {
          entry.record = { ...entry.record, lastSeenAt: seen };
        }
        this.#mark(watch, change.robotId, false);
        return;
      }
      case 'record':
        // Only a watched robot's record matters: a denial never moves a robot between orgs.
        this.handleRobotsChanged(change.robotIds.filter((id) => this.#robotWatch.has(id)));
        return;
      default:
        change satisfies never;
    }
  }

  /**
   * Robots' records or grants changed (enrolled, renamed, deleted, granted): they are read again
   * and their streams hear of them at the next flush.
   */
  handleRobotsChanged(robotIds: readonly string[]): void {
    if (this.#closed || robotIds.length === 0 || this.#watches.size === 0) return;
    for (const id of robotIds) this.#stale.add(id);
    this.#schedule();
  }

  /** `userId` is no longer a member of `orgId`: their streams of it end, their grants through it go. */
  handleMembershipRemoved(orgId: string, userId: string): void {
    for (const watch of this.#watches.values()) {
      for (const subscriber of [...watch.subscribers]) {
        if (subscriber.userId !== userId) continue;
        if (watch.orgId === orgId) {
          this.#end(subscriber, 'membership-removed', 'you are no longer a member of this organisation');
        } else if (subscriber.orgs.has(orgId)) {
          this.#setOrgs(watch, subscriber, new Set([...subscriber.orgs].filter((o) => o !== orgId)));
        }
      }
    }
  }

  /** `orgId` was deleted (with its robots): its streams end. */
  handleOrgDeleted(orgId: string): void {
    const watch = this.#watches.get(orgId);
    if (watch !== undefined) {
      for (const subscriber of [...watch.subscribers]) {
        this.#end(subscriber, 'org-deleted', 'this organisation was deleted');
      }
    }
    for (const other of this.#watches.values()) {
      for (const subscriber of other.subscribers) {
        if (subscriber.orgs.has(orgId)) {
          this.#setOrgs(other, subscriber, new Set([...subscriber.orgs].filter((o) => o !== orgId)));
        }
      }
    }
  }

  /**
   * Checks every stream's membership again (the timer calls it every `recheckMs`; a change made
   * through another node is seen then): a stream whose user left the org, or whose org is gone,
   * ends. Records that could not be read before are read again.
   */
  recheck(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const subscribers = [...this.#watches.values()].flatMap((w) => [...w.subscribers]);
    if (this.#stale.size > 0) this.#schedule();
    if (subscribers.length === 0) return Promise.resolve();
    const userIds = [...new Set(subscribers.map((s) => s.userId))];
    const orgIds = [...this.#watches.keys()];
    return this.#reads
      .run(async () => {
        const { orgsOf, existing } = await membershipsOf(this.#db, userIds, orgIds);
        for (const subscriber of subscribers) {
          if (subscriber.ended) continue;
          const now = orgsOf.get(subscriber.userId) ?? new Set<string>();
          if (!existing.has(subscriber.orgId)) {
            this.#end(subscriber, 'org-deleted', 'this organisation was deleted');
          } else if (!now.has(subscriber.orgId)) {
            this.#end(subscriber, 'membership-removed', 'you are no longer a member of this organisation');
          } else {
            const watch = this.#watches.get(subscriber.orgId);
            if (watch !== undefined) this.#setOrgs(watch, subscriber, now);
          }
        }
      })
      .catch((err: unknown) =>
        this.#log.warn({ err }, 'fleet streams: cannot check memberships; will try again'),
      );
  }

  /** Writes what is marked now (the timer does it at most every `flushMs`). */
  flush(): void {
    this.#clock.clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#lastFlushAt = this.#clock.now();
    if (this.#stale.size > 0) {
      const ids = [...this.#stale];
      this.#stale = new Set();
      this.#reads
        .run(() => this.#reload(ids))
        .catch((err: unknown) => {
          for (const id of ids) this.#stale.add(id);
          this.#log.warn({ err, robots: ids.length }, 'fleet streams: cannot read robots; will try again');
        });
    }
    this.#lookUpDrivers();
    for (const watch of this.#watches.values()) this.#flushWatch(watch);
  }

  /** Ends every stream (`server-closing`) and stops the timers. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unlisten();
    this.#clock.clearTimeout(this.#flushTimer);
    this.#clock.clearInterval(this.#heartbeat);
    this.#clock.clearInterval(this.#recheck);
    for (const watch of [...this.#watches.values()]) {
      for (const subscriber of [...watch.subscribers]) {
        this.#end(subscriber, 'server-closing', 'the server is shutting down: reconnect with backoff');
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Streams

  #watch(orgId: string): OrgWatch {
    const existing = this.#watches.get(orgId);
    if (existing !== undefined) return existing;
    const robotMap = new Map<string, RobotEntry>();
    const watch: OrgWatch = {
      orgId,
      robots: robotMap,
      subscribers: new Set(),
      dirty: new Map(),
      removed: new Map(),
      ready: this.#reads.run(async () => {
        const found = await readRobots(this.#db, { orgId });
        // Dropped meanwhile (everyone waiting left): nothing to keep.
        if (this.#watches.get(orgId) !== watch) return;
        for (const [id, facts] of found) {
          robotMap.set(id, { ...facts, lastSent: undefined });
          this.#robotWatch.set(id, watch);
        }
      }),
      waiting: 0,
    };
    watch.ready.catch(() => {
      if (this.#watches.get(orgId) === watch) this.#watches.delete(orgId);
    });
    this.#watches.set(orgId, watch);
    return watch;
  }

  /** Removes a stream; an org nobody watches any more is forgotten. */
  #remove(subscriber: Subscriber): void {
    const watch = this.#watches.get(subscriber.orgId);
    if (watch === undefined || !watch.subscribers.delete(subscriber)) return;
    this.#clock.clearTimeout(subscriber.expiry);
    this.#release(subscriber.userId);
    this.#dropIfUnwatched(watch);
  }

  #dropIfUnwatched(watch: OrgWatch): void {
    if (watch.subscribers.size > 0 || watch.waiting > 0 || this.#watches.get(watch.orgId) !== watch) return;
    this.#watches.delete(watch.orgId);
    for (const id of watch.robots.keys()) if (this.#robotWatch.get(id) === watch) this.#robotWatch.delete(id);
  }

  #release(userId: string): void {
    const left = (this.#streams.get(userId) ?? 1) - 1;
    if (left > 0) this.#streams.set(userId, left);
    else this.#streams.delete(userId);
  }

  /** Writes the `end` event, ends the response and removes the stream. */
  #end(subscriber: Subscriber, reason: FleetEndReason, message: string): void {
    if (subscriber.ended) return;
    subscriber.ended = true;
    this.#remove(subscriber);
    const event: FleetEvent = { type: 'end', reason, message };
    try {
      subscriber.sink.end(sseEvent('end', JSON.stringify(event)));
    } catch (err) {
      this.#log.warn({ err }, 'fleet stream: cannot end the response');
    }
  }

  /** Writes `text` to a stream, or ends one whose client has left too much unread. */
  #write(subscriber: Subscriber, text: string): void {
    if (subscriber.ended) return;
    if (subscriber.sink.bufferedBytes > this.#maxBuffered) {
      this.#end(subscriber, 'too-slow', 'the stream was not read fast enough: reconnect');
      return;
    }
    subscriber.sink.write(text);
  }

  #beat(): void {
    for (const watch of this.#watches.values()) {
      for (const subscriber of [...watch.subscribers]) this.#write(subscriber, SSE_HEARTBEAT);
    }
  }

  /** A stream's user is now in `orgs`: robots granted to an org may show another access. */
  #setOrgs(watch: OrgWatch, subscriber: Subscriber, next: ReadonlySet<string>): void {
    const same = next.size === subscriber.orgs.size && [...next].every((o) => subscriber.orgs.has(o));
    if (same) return;
    subscriber.orgs = next;
    for (const [id, entry] of watch.robots) {
      if (entry.grants.some((g) => g.granteeKind === 'org')) this.#mark(watch, id, true);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Coalescing

  /** Marks a robot to be written at the next flush. */
  #mark(watch: OrgWatch, robotId: string, force: boolean): void {
    const dirty = watch.dirty.get(robotId);
    if (dirty === undefined) watch.dirty.set(robotId, { added: false, force });
    else dirty.force ||= force;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#flushTimer !== undefined || this.#closed) return;
    // Changes of one turn of the event loop go together; then no more than one flush per interval.
    const wait = Math.max(0, this.#lastFlushAt + this.#flushMs - this.#clock.now());
    this.#flushTimer = this.#clock.setTimeout(() => this.flush(), wait);
  }

  /** Writes a watch's removals, then its marked robots, one write per stream. */
  #flushWatch(watch: OrgWatch): void {
    if (watch.dirty.size === 0 && watch.removed.size === 0) return;
    const texts = new Map<Subscriber, string[]>();
    for (const subscriber of watch.subscribers) texts.set(subscriber, []);
    for (const [robotId, reason] of watch.removed) {
      const text = sseEvent('robot-removed', JSON.stringify({ type: 'robot-removed', robotId, reason }));
      for (const parts of texts.values()) parts.push(text);
    }
    watch.removed.clear();
    for (const [robotId, { added, force }] of watch.dirty) {
      const entry = watch.robots.get(robotId);
      if (entry === undefined) continue;
      const plain = JSON.stringify(this.#view(watch, entry, undefined));
      if (!added && !force && plain === entry.lastSent) continue;
      entry.lastSent = plain;
      const type = added ? 'robot-added' : 'robot-updated';
      // At most three texts per robot, whatever the number of streams: one per access a grant gives.
      const byAccess = new Map<RobotAccess | null, string>();
      for (const [subscriber, parts] of texts) {
        const access = accessOf(entry.grants, subscriber.userId, subscriber.orgs);
        let text = byAccess.get(access);
        if (text === undefined) {
          const robot = access === null ? plain : JSON.stringify(this.#view(watch, entry, subscriber));
          text = sseEvent(type, `{"type":"${type}","robot":${robot}}`);
          byAccess.set(access, text);
        }
        parts.push(text);
      }
    }
    watch.dirty.clear();
    for (const [subscriber, parts] of texts) if (parts.length > 0) this.#write(subscriber, parts.join(''));
  }

  /** A robot's view for `subscriber` (`undefined`: a member without grants). */
  #view(watch: OrgWatch, entry: RobotEntry, subscriber: Subscriber | undefined) {
    const presence = this.#signalling?.presenceOf(entry.record.robotId);
    const driver = driverUserId(presence);
    if (driver !== undefined && this.#people.known(watch.orgId, driver) === undefined) {
      this.#want(watch.orgId, driver);
    }
    return robotView(entry.record, {
      isPublic: entry.grants.some((g) => g.granteeKind === 'public'),
      access: subscriber === undefined ? null : accessOf(entry.grants, subscriber.userId, subscriber.orgs),
      presence,
      // Every stream is a member's: the driver is shown, by name once known.
      person: (userId) => this.#people.known(watch.orgId, userId) ?? null,
    });
  }

  #want(orgId: string, userId: string): void {
    let set = this.#wanted.get(orgId);
    if (set === undefined) {
      set = new Set();
      this.#wanted.set(orgId, set);
    }
    set.add(userId);
    this.#schedule();
  }

  /** Reads the drivers not known yet; their robots are written again once they are. */
  #lookUpDrivers(): void {
    if (this.#wanted.size === 0) return;
    const wanted = [...this.#wanted];
    this.#wanted.clear();
    for (const [orgId, userIds] of wanted) {
      const ids = [...userIds];
      this.#reads
        .run(() => this.#people.load(orgId, ids))
        .then(
          () => {
            const watch = this.#watches.get(orgId);
            if (watch === undefined) return;
            for (const [robotId] of watch.robots) {
              const driver = driverUserId(this.#signalling?.presenceOf(robotId));
              if (driver !== undefined && userIds.has(driver)) this.#mark(watch, robotId, true);
            }
          },
          (err: unknown) => this.#log.warn({ err }, "fleet streams: cannot read drivers' names"),
        );
    }
  }

  // -------------------------------------------------------------------------------------------
  // Reading the database

  /** Reads robots again and applies what changed: added to, updated in or removed from their org. */
  async #reload(ids: readonly string[]): Promise<void> {
    const found = await readRobots(this.#db, { robotIds: ids });
    for (const id of ids) {
      const facts = found.get(id);
      const current = this.#robotWatch.get(id);
      const orgId = facts?.record.orgId;
      const target = orgId == null ? undefined : this.#watches.get(orgId);
      if (current !== undefined && current !== target) {
        current.robots.delete(id);
        current.dirty.delete(id);
        current.removed.set(id, facts === undefined ? 'deleted' : 'left-org');
        this.#robotWatch.delete(id);
        this.#schedule();
      }
      if (facts === undefined || target === undefined) continue;
      const entry = target.robots.get(id);
      if (entry === undefined) {
        target.robots.set(id, { ...facts, lastSent: undefined });
        this.#robotWatch.set(id, target);
        target.dirty.set(id, { added: true, force: true });
        this.#schedule();
      } else {
        // The last-seen time signalling reported may be newer than the one written.
        const kept = entry.record.lastSeenAt;
        const read = facts.record.lastSeenAt;
        entry.record = {
          ...facts.record,
          lastSeenAt: kept !== null && (read === null || kept > read) ? kept : read,
        };
        entry.grants = facts.grants;
        this.#mark(target, id, true);
      }
    }
  }
}
