/**
 * Pilot session tokens: the service's own ES256 keys (rotated, shared by every node through the
 * database, published as a JWKS) and the tokens signed with them.
 *
 * @packageDocumentation
 */
import type { AuditBatcher } from '../audit/index.js';
import type { SessionKeyStore } from './keys.js';

// The decorations `buildApp` (app.ts) puts on the app: the session keys and the audit batcher it
// uses or made. Declared here, where every user of the app's types (`AppDependencies` names
// `SessionKeyStore`) picks them up.
declare module 'fastify' {
  interface FastifyInstance {
    /** The pilot session keys: signs tokens, publishes the JWKS, verifies tokens for the signalling server. */
    readonly sessionKeys: SessionKeyStore;
    /** Audit entries of hot paths (token mints), written in batches; `flush()` before reading them. */
    readonly auditBatcher: AuditBatcher;
  }
}

export {
  KEY_EXPIRY_MARGIN_MS,
  NEXT_KEY_LEAD_MS,
  SESSION_KEY_LOCK,
  SESSION_KEY_REFRESH_MS,
  SessionKeyStore,
  type SessionKeyStoreOptions,
  type SessionPublicJwk,
  type VerifySessionTokenOptions,
} from './keys.js';
export {
  isSessionTokenError,
  SESSION_JWKS_PATH,
  SESSION_SCOPES,
  SESSION_TOKEN_ALG,
  SESSION_TOKEN_TYP,
  type SessionScope,
  type SessionTokenClaims,
  SessionTokenError,
  type SessionTokenErrorCode,
  sessionTokenClaimsSchema,
} from './tokens.js';
