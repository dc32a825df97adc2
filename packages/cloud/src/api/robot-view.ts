/**
 * A robot as the API shows it, in `GET /api/v1/robots` and in the fleet's live events alike: its
 * record, its presence on this node, the caller's access, who drives it and its last signalling
 * denial. One schema and one function, so the list and the stream never disagree.
 */

import { SESSION_BACKENDS } from '@svc/wire';
import { and, eq, inArray } from 'drizzle-orm';
import { z } from 'zod';
import {
  type CloudDb,
  memberships,
  ROBOT_ACCESS,
  ROBOT_DENIAL_REASONS,
  type Robot,
  type RobotAccess,
  users,
} from '../db/index.js';
import { offlineView, type PresenceView, subjectOf } from '../signalling/index.js';
import { optionalTimestamp, timestamp, uuid } from './schemas.js';

/** A session on the robot. */
const sessionPath = z
  .enum(['direct', 'relay'])
  .describe(
    "How the session's packets travel: straight between pilot and robot, or through svc-cloud's relay",
  );
const sessionBackend = z
  .enum(SESSION_BACKENDS)
  .describe('What carries the session: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)');
const robotSession = z.object({
  sessionId: z.string(),
  role: z.enum(['driver', 'observer']),
  path: sessionPath,
  backend: sessionBackend,
});

/** Who holds the driver slot. */
const robotDriver = z
  .object({
    sessionId: z.string(),
    userId: uuid
      .nullable()
      .describe('The user the session is for; null for an API key, nobody signed in, or hidden'),
    name: z.string().nullable().describe("The user's display name, when known"),
    email: z
      .string()
      .nullable()
      .describe("The user's verified email, when known and the user is a member of the robot's org"),
  })
  .nullable()
  .describe(
    "The session holding the driver slot, or null when nobody drives; who it is for is shown only to members (and API keys) of the robot's org",
  );

/** The last signalling denial under the robot's id. */
const robotDenial = z
  .object({
    reason: z
      .enum(ROBOT_DENIAL_REASONS)
      .describe(
        '`key-mismatch`: a connection proved another key than the enrolled one (delete the robot in the console and enrol again); `bad-signature`: its signature did not verify',
      ),
    at: timestamp,
  })
  .nullable()
  .describe(
    'The last signalling denial under this id since the robot last connected; null when there was none (cleared when the robot next proves its key)',
  );

/** A robot as the API shows it. */
export const robotSchema = z.object({
  robotId: z.string(),
  name: z.string().nullable(),
  orgId: uuid.nullable().describe('Its organisation; null for a robot admitted by open dev enrolment'),
  public: z.boolean().describe('Whether a public grant lets everyone observe it'),
  access: z.enum(ROBOT_ACCESS).nullable().describe('The strongest access a grant gives the caller'),
  enrolledAt: optionalTimestamp,
  online: z.boolean(),
  lastSeenAt: optionalTimestamp,
  channels: z.array(
    z.object({
      id: z.number().int(),
      name: z.string(),
      kind: z.enum(['video', 'sensor', 'command']),
      codec: z.string(),
    }),
  ),
  candidates: z.array(
    z.object({
      address: z.string(),
      port: z.number().int(),
      family: z.enum(['ipv4', 'ipv6']),
      kind: z.enum(['host', 'mapped']),
    }),
  ),
  relay: z.boolean().describe('Whether the robot offers the cloud relay'),
  backends: z
    .array(z.enum(SESSION_BACKENDS))
    .describe(
      'The transports the robot serves while online: `quic` (WebTransport, and the cloud relay) and `webrtc` (ICE and TURN); empty while offline',
    ),
  sessions: z.array(robotSession),
  driver: robotDriver,
  lastDenial: robotDenial,
});

/** A robot as the API shows it. */
export type RobotView = z.output<typeof robotSchema>;

/** The columns of a robot's row the view shows. */
export type RobotRecord = Pick<
  Robot,
  'robotId' | 'name' | 'orgId' | 'enrolledAt' | 'lastSeenAt' | 'lastDenialReason' | 'lastDenialAt'
>;

/** A person as a robot's view names them: `email` only for a member of the robot's org. */
export interface PersonInfo {
  readonly name: string | null;
  readonly email: string | null;
}

/** What the view of one robot depends on besides its row. */
export interface ViewInputs {
  readonly isPublic: boolean;
  /** The strongest access a grant gives the caller. */
  readonly access: RobotAccess | null;
  /** The robot's presence on this node; `undefined` when it is not connected here. */
  readonly presence: PresenceView | undefined;
  /**
   * Who the driver's user is, for a caller who may know: `undefined` hides the user (or they are
   * not known yet), `null` shows the user id without a name.
   */
  readonly person: (userId: string) => PersonInfo | null | undefined;
}

/** A robot as the API shows it: its record and its presence on this node. */
export function robotView(row: RobotRecord, inputs: ViewInputs): RobotView {
  const presence = inputs.presence ?? offlineView(row.lastSeenAt);
  const lastSeenAt =
    row.lastSeenAt !== null && (presence.lastSeenAt === null || row.lastSeenAt > presence.lastSeenAt)
      ? row.lastSeenAt
      : presence.lastSeenAt;
  return {
    robotId: row.robotId,
    name: row.name,
    orgId: row.orgId,
    public: inputs.isPublic,
    access: inputs.access,
    enrolledAt: row.enrolledAt,
    online: presence.online,
    lastSeenAt,
    channels: [...presence.channels],
    candidates: [...presence.candidates],
    relay: presence.relay,
    backends: [...presence.backends],
    sessions: presence.sessions.map((x) => ({
      sessionId: x.sessionId,
      role: x.role,
      path: x.path,
      backend: x.backend,
    })),
    driver: driverOf(presence, inputs.person),
    lastDenial:
      row.lastDenialReason === null || row.lastDenialAt === null
        ? null
        : { reason: row.lastDenialReason, at: row.lastDenialAt },
  };
}

/** The user id behind the session holding the driver slot, if it is a user's. */
export function driverUserId(presence: PresenceView | undefined): string | undefined {
  const driver = presence?.sessions.find((s) => s.role === 'driver');
  if (driver === undefined) return undefined;
  const subject = subjectOf(driver.sub);
  return subject.kind === 'user' ? subject.id : undefined;
}

function driverOf(presence: PresenceView, person: ViewInputs['person']): z.output<typeof robotDriver> {
  const driver = presence.sessions.find((s) => s.role === 'driver');
  if (driver === undefined) return null;
  const subject = subjectOf(driver.sub);
  const known = subject.kind === 'user' ? person(subject.id) : undefined;
  return {
    sessionId: driver.sessionId,
    userId: known === undefined || subject.kind !== 'user' ? null : subject.id,
    name: known?.name ?? null,
    email: known?.email ?? null,
  };
}

/** Options of {@link OrgPeople}. */
export interface OrgPeopleOptions {
  readonly db: CloudDb;
  /** Monotonic ms. */
  readonly now: () => number;
  /** How long a person is trusted, ms. Default 300 000. */
  readonly ttlMs?: number;
  /** People kept. Default 10 000. */
  readonly maxEntries?: number;
}

/**
 * Drivers' names and emails as a robot's org sees them: the name always, the email only when the
 * driver is a member of that org (as its members list shows it). Read in one query per org and
 * kept a few minutes, so a driver change on a busy fleet costs no query.
 */
export class OrgPeople {
  readonly #db: CloudDb;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #max: number;
  /** `<org id> <user id>` to what is known, oldest first. */
  readonly #people = new Map<string, { readonly info: PersonInfo; readonly at: number }>();

  constructor(options: OrgPeopleOptions) {
    this.#db = options.db;
    this.#now = options.now;
    this.#ttlMs = options.ttlMs ?? 300_000;
    this.#max = options.maxEntries ?? 10_000;
  }

  /** The user as `orgId` sees them, when known and fresh; `undefined` when {@link OrgPeople.load} must read it. */
  known(orgId: string, userId: string): PersonInfo | undefined {
    const entry = this.#people.get(`${orgId} ${userId}`);
    if (entry === undefined || this.#now() - entry.at >= this.#ttlMs) return undefined;
    return entry.info;
  }

  /** Reads the users as `orgId` sees them (a user that does not exist is known without a name). */
  async load(orgId: string, userIds: readonly string[]): Promise<void> {
    if (userIds.length === 0) return;
    const rows = await this.#db
      .select({ id: users.id, name: users.name, email: users.email, member: memberships.userId })
      .from(users)
      .leftJoin(memberships, and(eq(memberships.userId, users.id), eq(memberships.orgId, orgId)))
      .where(inArray(users.id, [...userIds]));
    const found = new Map(rows.map((r) => [r.id, r]));
    const at = this.#now();
    for (const userId of userIds) {
      const row = found.get(userId);
      const key = `${orgId} ${userId}`;
      this.#people.delete(key);
      this.#people.set(key, {
        info: { name: row?.name ?? null, email: row?.member == null ? null : row.email },
        at,
      });
    }
    while (this.#people.size > this.#max) {
      const oldest = this.#people.keys().next();
      if (oldest.done === true) break;
      this.#people.delete(oldest.value);
    }
  }
}
