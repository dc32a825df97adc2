import type { SignalServerMessage } from '@svc/wire';
import { and, eq } from 'drizzle-orm';
import type { Actor } from '../audit/index.js';
import { type CloudDb, memberships, type OrgRole, users } from '../db/index.js';

/** A person as pilots see them in `driver`, `control-request` and `control-pending`: the `sub` and a name. */
export type SignalPerson = NonNullable<Extract<SignalServerMessage, { type: 'driver' }>['user']>;

/** What a session token's `sub` names: a user, an API key, or nobody signed in. */
export type Subject =
  | { readonly kind: 'user'; readonly id: string }
  | { readonly kind: 'api-key'; readonly id: string }
  | { readonly kind: 'anonymous' }
  /** A `sub` of no known form (a robot reports what the token said). */
  | { readonly kind: 'other' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Reads a token's `sub` (`user:<id>`, `key:<id>`, `anonymous`). */
export function subjectOf(sub: string): Subject {
  if (sub === 'anonymous') return { kind: 'anonymous' };
  const colon = sub.indexOf(':');
  const kind = sub.slice(0, colon);
  const id = sub.slice(colon + 1);
  if (colon > 0 && id !== '') {
    if (kind === 'user' && UUID.test(id)) return { kind: 'user', id };
    if (kind === 'key') return { kind: 'api-key', id };
  }
  return { kind: 'other' };
}

/** The audit log's actor for a session's `sub`, as the token mint records the same caller. */
export function actorOfSub(sub: string): Actor {
  const subject = subjectOf(sub);
  switch (subject.kind) {
    case 'user':
      return { kind: 'user', id: subject.id };
    case 'api-key':
      return { kind: 'api_key', id: subject.id };
    case 'anonymous':
    case 'other':
      // A person, unnamed; the entry's detail carries the `sub`.
      return { kind: 'user', id: null };
    default:
      return subject satisfies never;
  }
}

/** Options of {@link PeopleDirectory}. */
export interface PeopleDirectoryOptions {
  readonly db: CloudDb;
  /** Names kept. Default 10 000. */
  readonly maxNames?: number;
  /** How long a name is trusted, ms. Default 300 000. */
  readonly nameTtlMs?: number;
  /** Monotonic ms (the signalling clock's `now`). */
  readonly now: () => number;
}

/**
 * Who the people behind sessions are, for the pilots that see them and for the takeover check:
 * users' display names (read once and kept a few minutes, so a `driver` message after each change
 * costs no query) and their role in an org (read at each takeover, never cached: a demoted admin
 * loses the right at once).
 */
export class PeopleDirectory {
  readonly #db: CloudDb;
  readonly #maxNames: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** User id to name (`null`: the user has none or is unknown), oldest first. */
  readonly #names = new Map<string, { readonly name: string | null; readonly at: number }>();

  constructor(options: PeopleDirectoryOptions) {
    this.#db = options.db;
    this.#maxNames = options.maxNames ?? 10_000;
    this.#ttlMs = options.nameTtlMs ?? 300_000;
    this.#now = options.now;
  }

  /**
   * The person behind `sub` as other pilots see them, when it is known without a query; `undefined`
   * when {@link PeopleDirectory.person} must ask the database. `act` is an API key's `subject`.
   */
  known(sub: string, act: string | undefined): SignalPerson | undefined {
    const subject = subjectOf(sub);
    if (subject.kind !== 'user') return { id: sub, name: subject.kind === 'api-key' ? (act ?? null) : null };
    const cached = this.#names.get(subject.id);
    if (cached === undefined || this.#now() - cached.at >= this.#ttlMs) return undefined;
    return { id: sub, name: cached.name };
  }

  /** The person behind `sub`, reading a user's name when it is not known. */
  async person(sub: string, act: string | undefined): Promise<SignalPerson> {
    const known = this.known(sub, act);
    if (known !== undefined) return known;
    const subject = subjectOf(sub);
    if (subject.kind !== 'user') return { id: sub, name: null };
    const [row] = await this.#db.select({ name: users.name }).from(users).where(eq(users.id, subject.id));
    const name = row?.name ?? null;
    this.#names.delete(subject.id);
    this.#names.set(subject.id, { name, at: this.#now() });
    if (this.#names.size > this.#maxNames) {
      const oldest = this.#names.keys().next();
      if (oldest.done !== true) this.#names.delete(oldest.value);
    }
    return { id: sub, name };
  }

  /** The role of the user behind `sub` in `orgId`; `undefined` when not a member (or not a user). */
  async roleIn(sub: string, orgId: string): Promise<OrgRole | undefined> {
    const subject = subjectOf(sub);
    if (subject.kind !== 'user') return undefined;
    const [row] = await this.#db
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, subject.id)));
    return row?.role;
  }
}
