import { z } from 'zod';
import { ORG_ROLES } from '../db/index.js';

/** A UUID (a path parameter or an id in a body). */
export const uuid = z.uuid({ error: 'expected a UUID' });

/**
 * A time in an answer: a `Date` in the handler, an ISO 8601 string on the wire (`toISOString()`),
 * and a `Date` again when an answer is decoded (the tests' contract check).
 */
export const timestamp = z.codec(z.iso.datetime(), z.date(), {
  decode: (text) => new Date(text),
  encode: (date) => date.toISOString(),
});

/** {@link timestamp} or `null` (never happened). */
export const optionalTimestamp = timestamp.nullable();

/** A member's role in an org. */
export const orgRole = z.enum(ORG_ROLES);

/** The path of everything under `/api/v1/orgs/:org`. */
export const orgParams = z.object({ org: uuid });

/** The path of one item of an org (`/api/v1/orgs/:org/<items>/:id`). */
export const orgItemParams = z.object({ org: uuid, id: uuid });

/** A robot id in a path (checked against the database, so only its length is bounded here). */
export const robotIdParam = z.string().min(1).max(128);

/** The path of everything under `/api/v1/robots/:robot`. */
export const robotParams = z.object({ robot: robotIdParam });

/** The answer of a route that has nothing to say (204). */
export const noContent = z.undefined().describe('Done; no body');
