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
}

/** Appends entries to the audit log (inside the caller's transaction when given one). */
export async function audit(db: CloudDb, ...entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db.insert(auditLog).values(
    entries.map((e) => ({
      orgId: e.orgId,
      actorKind: e.actor.kind,
      actorId: e.actor.id,
      action: e.action,
      targetKind: e.targetKind ?? null,
      targetId: e.targetId ?? null,
      detail: e.detail ?? {},
    })),
  );
}
