import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Clock, type Logger, silentLogger, systemClock } from '@svc/runtime';
import type { JWK } from 'jose';
import Provider, {
  type Account,
  type Configuration,
  errors,
  type Grant,
  interactionPolicy,
  type KoaContextWithOIDC,
  type JWK as ProviderJwk,
} from 'oidc-provider';
import { DevAccounts, normalizeEmail, userClaims } from './accounts.js';
import { readBody, sendHtml } from './http.js';
import { type DevUser, renderLoginPage, TYPED_NAME } from './login-page.js';
import {
  DEFAULT_MANAGEMENT_RESOURCE,
  handleOneTimeTokenRequest,
  LOGTO_TOKEN_PATH,
  MANAGEMENT_SCOPE,
  type ManagementApiOptions,
  ONE_TIME_TOKENS_PATH,
} from './management-api.js';
import { type OneTimeTokenRefusal, OneTimeTokens } from './one-time-tokens.js';
import { StateStore } from './state-store.js';

/** Signature algorithms the embedded provider can sign with (ID tokens and access tokens alike). */
export type SigningAlgorithm = 'ES256' | 'RS256' | 'Ed25519';

/** Options of {@link createOidcProvider}. */
export interface OidcProviderOptions {
  /**
   * Issuer identifier, e.g. `http://127.0.0.1:8080/dev-oidc`. Its path is the mount path: the handler
   * serves every route below it.
   */
  issuer: string;
  /** The API resource (resource indicator); access tokens carry it as `aud`. */
  audience: string;
  /** Client id of the one public client (the console). */
  clientId: string;
  /** Redirect URIs of the client; their origins are also allowed CORS access to the token endpoint. */
  redirectUris: readonly string[];
  /** Where the client may ask to be sent after logout. */
  postLogoutRedirectUris?: readonly string[] | undefined;
  /** Known users, listed on the login page. */
  users?: readonly DevUser[] | undefined;
  /**
   * Dev mode: the login page also takes any typed name `n` (trimmed, lowercased, matching
   * {@link TYPED_NAME}) and logs in `sub` `dev-n` with the verified email `n@example.test`.
   */
  allowTypedNames?: boolean | undefined;
  /** Name of the group claim in the ID token and userinfo. Default `groups`. */
  groupClaim?: string | undefined;
  /** Algorithm of generated signing keys. Default `ES256`. Ignored when `signingKeys` is given. */
  signingAlgorithm?: SigningAlgorithm | undefined;
  /** Private JWKs; the first is used for signing. Default: one generated key. */
  signingKeys?: readonly JWK[] | undefined;
  /** Keys that sign the provider's cookies. Default: one random key. */
  cookieKeys?: readonly string[] | undefined;
  /**
   * Called with every signing key, the signing one first, after {@link EmbeddedOidcProvider.rotateKeys}
   * added one: where keys are kept, to keep the new one too.
   */
  onSigningKeysChanged?: ((keys: readonly JWK[]) => void) | undefined;
  /**
   * Where sessions, interactions, grants, codes, refresh tokens and one-time sign-in tokens are kept.
   * Default: a new in-memory store (gone with the process); see `openDevelopmentProvider` for one
   * kept in a folder.
   */
  store?: StateStore | undefined;
  /** Expiry of one-time sign-in tokens is read on its `wallNow()`. Default `systemClock`. */
  clock?: Clock | undefined;
  /**
   * Also serve a Logto-compatible management API for one-time sign-in tokens (for tests that use this
   * provider as an external issuer with svc-cloud's Logto invitation step). Default: none.
   */
  managementApi?: ManagementApiOptions | undefined;
  /**
   * When true (default), an authorization request without `resource` is for the API resource, so the
   * access token is a JWT for `audience`. When false it gets an opaque access token, which the userinfo
   * endpoint accepts (the provider shape of spec 5.1.4's "userinfo fallback").
   */
  resourceByDefault?: boolean | undefined;
  /** Trust `X-Forwarded-*` headers (behind a reverse proxy). Default false. */
  proxy?: boolean | undefined;
  /**
   * Called with errors the provider could not turn into an OAuth error response (it answers 500).
   * Default: logged to `logger`. Such errors never contain tokens.
   */
  onServerError?: ((err: Error) => void) | undefined;
  /** Where server errors are logged when no `onServerError` is given. Default: nothing. */
  logger?: Logger | undefined;
}

/** An embedded OpenID provider, ready to be served by a Node HTTP server. */
export interface EmbeddedOidcProvider {
  readonly issuer: string;
  /** Path prefix every route lives under (`''` when the issuer has no path), e.g. `/dev-oidc`. */
  readonly mountPath: string;
  readonly audience: string;
  readonly clientId: string;
  /** The current oidc-provider instance; {@link EmbeddedOidcProvider.rotateKeys} replaces it. */
  readonly provider: Provider;
  /**
   * Node request handler. It expects the full request path (mount path included) in `req.url`, answers
   * 404 outside the mount path, and serves the login page and every oidc-provider route below it.
   */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** The public keys the provider publishes at its `jwks_uri`, the signing key first. */
  publicKeys(): JWK[];
  /**
   * Adds a new signing key (generated when not given) with a new `kid` and signs with it from now on; the
   * old keys stay published so tokens already issued still verify. Sessions survive. Returns the new kid.
   */
  rotateKeys(key?: JWK): string;
  /**
   * Mints a one-time sign-in token for `email` (spec 5.1.7): an authorization request with
   * `one_time_token=<token>&login_hint=<email>` signs that person in once, without the login page.
   *
   * @throws {TypeError} when `email` is not an email address or the lifetime is not 1 s to 90 days.
   */
  issueOneTimeToken(email: string, options: { expiresInSec: number }): Promise<string>;
  /**
   * Waits until everything the provider changed is saved ({@link StateStore.close}; nothing to wait for
   * with an in-memory store). Call it after the server stopped handing it requests.
   */
  close(): Promise<void>;
}

/** Group claim name used when none is configured. */
export const DEFAULT_GROUP_CLAIM = 'groups';

/** Extra authorization parameter carrying a one-time sign-in token (Logto's name). */
export const ONE_TIME_TOKEN_PARAM = 'one_time_token';

const MAX_FORM_BYTES = 8 * 1024;
const DAY_SEC = 86_400;
/** Lifetimes in seconds, set explicitly (oidc-provider nags about its defaults). */
const TTL = {
  AccessToken: 3600,
  AuthorizationCode: 60,
  ClientCredentials: 3600,
  IdToken: 3600,
  Interaction: 3600,
  Grant: 14 * DAY_SEC,
  Session: 14 * DAY_SEC,
  RefreshToken: 14 * DAY_SEC,
} as const;

/** What the login page says when a one-time sign-in token is refused; never the token itself. */
const REFUSED_TOKEN_MESSAGES: Readonly<Record<OneTimeTokenRefusal | 'no-email', string>> = {
  unknown: 'This sign-in link is not valid. Ask for a new invitation, or sign in below.',
  expired: 'This sign-in link has expired. Ask for a new invitation, or sign in below.',
  used: 'This sign-in link was already used. Sign in below, or ask for a new invitation.',
  'other-email':
    'This sign-in link is for another email address. Open the invitation link exactly as it was sent.',
  'no-email': 'This sign-in link names no email address. Open the invitation link exactly as it was sent.',
};

/** Generates a private signing JWK with a random `kid`, `use: sig` and `alg` set. */
export function generateSigningKey(algorithm: SigningAlgorithm = 'ES256'): JWK {
  const { privateKey } =
    algorithm === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : algorithm === 'RS256'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : generateKeyPairSync('ed25519');
  return { ...(privateKey.export({ format: 'jwk' }) as JWK), kid: randomUUID(), alg: algorithm, use: 'sig' };
}

/** Generates a random cookie-signing key. */
export function generateCookieKey(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Builds an OpenID provider (oidc-provider v9) for development and tests: one public client with PKCE,
 * access tokens that are JWTs for the API resource carrying only `sub` (spec 5.1.2 and 5.1.4), ID tokens
 * with `email`, `email_verified` and the group claim, rotating refresh tokens for the client (no
 * `offline_access` needed; they end with the provider session), a plain HTML login page that logs in a
 * known or typed user and grants what the client asked for without a consent step, and one-time
 * sign-in tokens for invitations (`one_time_token` with `login_hint`, spec 5.1.7).
 *
 * Serve it by passing {@link EmbeddedOidcProvider.handler} every request whose path starts with the
 * issuer's path. In a bare `node:http` server: `createServer(p.handler)`, or call `p.handler(req, res)`
 * for URLs below the mount path. In svc-cloud's fastify server, hand over the raw request before fastify
 * reads the body:
 *
 * ```ts
 * app.route({
 *   method: ['GET', 'POST', 'OPTIONS'], // fastify adds HEAD
 *   url: `${p.mountPath}/*`,
 *   onRequest: (request, reply, done) => {
 *     reply.hijack();
 *     p.handler(request.raw, reply.raw);
 *     done();
 *   },
 *   handler: async (_request, reply) => reply.code(503).send(), // never reached
 * });
 * ```
 *
 * The handler strips the mount path from `req.url` and keeps the full path in `req.originalUrl`, the
 * convention oidc-provider documents for mounting in connect/express, so the URLs it builds include the
 * prefix. The issuer must be the URL the browser and the API use, so a server listening on port 0
 * creates the provider after `listen()`.
 */
export function createOidcProvider(options: OidcProviderOptions): EmbeddedOidcProvider {
  const issuerUrl = new URL(options.issuer);
  const mountPath = issuerUrl.pathname.replace(/\/+$/, '');
  const groupClaim = options.groupClaim ?? DEFAULT_GROUP_CLAIM;
  const accounts = new DevAccounts([...(options.users ?? [])], options.allowTypedNames ?? false);
  const keys: JWK[] = [...(options.signingKeys ?? [generateSigningKey(options.signingAlgorithm)])];
  if (keys.length === 0)
    throw new TypeError('createOidcProvider option signingKeys: expected at least one key');
  keys.forEach((key, i) => {
    requireSigningKey(key, `createOidcProvider option signingKeys[${i}]`);
  });
  const cookieKeys = [...(options.cookieKeys ?? [generateCookieKey()])];
  if (cookieKeys.length === 0 || cookieKeys.some((key) => typeof key !== 'string' || key === '')) {
    throw new TypeError('createOidcProvider option cookieKeys: expected at least one non-empty string');
  }
  const logger = options.logger ?? silentLogger;
  const onServerError =
    options.onServerError ??
    ((err: Error) => logger.error({ err }, 'the development identity provider failed to answer'));
  const store = options.store ?? new StateStore();
  const clock = options.clock ?? systemClock;
  const oneTimeTokens = new OneTimeTokens(store, clock);
  const management =
    options.managementApi === undefined
      ? undefined
      : {
          ...options.managementApi,
          resource: options.managementApi.resource ?? DEFAULT_MANAGEMENT_RESOURCE,
        };
  if (management !== undefined && management.clientId === options.clientId) {
    throw new TypeError('createOidcProvider option managementApi.clientId: must differ from clientId');
  }

  const build = (): Provider => {
    const signingAlg = requireSigningKey(keys[0], 'signing key');
    const policy = interactionPolicy.base();
    // A one-time token always goes through the login interaction, even with a session: it says who
    // signs in (an invitee following their link while someone else is signed in in the same browser).
    policy
      .get('login')
      ?.checks.add(
        new interactionPolicy.Check(
          'one_time_token',
          'a one-time sign-in token was presented',
          (ctx) =>
            typeof ctx.oidc.params?.[ONE_TIME_TOKEN_PARAM] === 'string' &&
            ctx.oidc.result?.login === undefined,
        ),
      );
    const configuration: Configuration = {
      adapter: store.adapter(),
      clients: [
        {
          client_id: options.clientId,
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: [...options.redirectUris],
          post_logout_redirect_uris: [...(options.postLogoutRedirectUris ?? [])],
          id_token_signed_response_alg: signingAlg,
        },
        ...(management === undefined
          ? []
          : [
              {
                client_id: management.clientId,
                client_secret: management.clientSecret,
                token_endpoint_auth_method: 'client_secret_basic' as const,
                grant_types: ['client_credentials'],
                response_types: [],
                redirect_uris: [],
                // Never used (no ID tokens for it), but checked against the keys there are.
                id_token_signed_response_alg: signingAlg,
              },
            ]),
      ],
      jwks: { keys: keys as ProviderJwk[] },
      cookies: { keys: cookieKeys },
      pkce: { required: () => true },
      ttl: {
        ...TTL,
        // Rotation hands out a new refresh token with what is left of the old one's lifetime: a public
        // client's refresh tokens end 14 days after the sign-in, however often they are used.
        RefreshToken: (ctx) => ctx?.oidc.entities.RotatedRefreshToken?.remainingTTL ?? TTL.RefreshToken,
      },
      conformIdTokenClaims: false,
      extraParams: [ONE_TIME_TOKEN_PARAM],
      // Refresh tokens for the console without `offline_access`, so it renews without an iframe.
      issueRefreshToken: (_ctx, client) =>
        client.clientId === options.clientId && client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: true,
      claims: {
        openid: ['sub', groupClaim],
        email: ['email', 'email_verified'],
        profile: ['name'],
      },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: management !== undefined },
        resourceIndicators: {
          enabled: true,
          defaultResource: (_ctx, client, oneOf) =>
            oneOf?.[0] ??
            (client.clientId === management?.clientId
              ? management.resource
              : options.resourceByDefault === false
                ? undefined
                : options.audience),
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resourceIndicator, client) => {
            if (management !== undefined && client.clientId === management.clientId) {
              if (resourceIndicator !== management.resource) throw new errors.InvalidTarget();
              return { scope: MANAGEMENT_SCOPE, audience: management.resource, accessTokenFormat: 'opaque' };
            }
            if (resourceIndicator !== options.audience) throw new errors.InvalidTarget();
            return {
              scope: '',
              audience: options.audience,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: signingAlg } },
            };
          },
        },
      },
      clientBasedCORS: (_ctx, origin, client) =>
        (client.redirectUris ?? []).some((uri) => new URL(uri).origin === origin),
      interactions: {
        policy,
        url: (_ctx, interaction) => `${mountPath}/interaction/${interaction.uid}`,
      },
      loadExistingGrant: grantEverythingRequested,
      findAccount: (_ctx, sub): Account | undefined => {
        const user = accounts.find(sub);
        return user === undefined
          ? undefined
          : { accountId: user.sub, claims: () => userClaims(user, groupClaim) };
      },
    };
    const provider = new Provider(options.issuer, configuration);
    provider.proxy = options.proxy ?? false;
    provider.on('server_error', (_ctx: unknown, err: Error) => onServerError(err));
    return provider;
  };

  let provider = build();
  let callback = provider.callback();

  /** The account a one-time token in the authorization request signs in, or why it signs in no one. */
  const redeem = async (
    params: Record<string, unknown>,
  ): Promise<{ accountId: string } | { refused: string } | undefined> => {
    const token = params[ONE_TIME_TOKEN_PARAM];
    if (typeof token !== 'string' || token === '') return undefined;
    const hint = typeof params.login_hint === 'string' ? normalizeEmail(params.login_hint) : undefined;
    if (hint === undefined) return { refused: REFUSED_TOKEN_MESSAGES['no-email'] };
    const outcome = await oneTimeTokens.redeem(token, hint);
    return outcome.ok
      ? { accountId: accounts.subjectForEmail(outcome.email) }
      : { refused: REFUSED_TOKEN_MESSAGES[outcome.reason] };
  };

  const interaction = async (req: IncomingMessage, res: ServerResponse, uid: string): Promise<void> => {
    const current = provider;
    let details: Awaited<ReturnType<Provider['interactionDetails']>>;
    try {
      details = await current.interactionDetails(req, res);
    } catch (cause) {
      if (cause instanceof errors.SessionNotFound) {
        sendHtml(
          res,
          400,
          errorPage('This sign-in attempt is unknown or has expired. Start again from the app.'),
        );
        return;
      }
      throw cause;
    }
    if (details.uid !== uid || details.prompt.name !== 'login') {
      sendHtml(
        res,
        400,
        errorPage('This sign-in attempt cannot be completed here. Start again from the app.'),
      );
      return;
    }
    const page = (status: number, message?: string): void =>
      sendHtml(
        res,
        status,
        renderLoginPage({
          action: `${mountPath}/interaction/${uid}`,
          users: accounts.users,
          allowTypedNames: accounts.allowTypedNames,
          message,
        }),
      );

    if (req.method === 'GET') {
      // A one-time token is used when the browser arrives from the authorization request (never on
      // HEAD, which previews may send); the form below stays usable when it is refused.
      const byToken = await redeem(details.params);
      if (byToken !== undefined && 'accountId' in byToken) {
        await current.interactionFinished(
          req,
          res,
          { login: { accountId: byToken.accountId } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      page(byToken === undefined ? 200 : 400, byToken?.refused);
      return;
    }
    if (req.method === 'HEAD') {
      page(200);
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'GET, HEAD, POST' }).end();
      return;
    }
    const text = await readBody(req, MAX_FORM_BYTES);
    if (text === undefined) {
      page(413, 'The form was too large.');
      return;
    }
    const accountId = accounts.chooseFromForm(new URLSearchParams(text));
    if (accountId === undefined) {
      page(
        400,
        accounts.allowTypedNames
          ? 'Pick a user or type a name of letters, digits, ".", "_" or "-".'
          : 'Pick a user.',
      );
      return;
    }
    await current.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
  };

  const fail = (res: ServerResponse, err: unknown, page: boolean): void => {
    onServerError(err instanceof Error ? err : new Error(String(err)));
    if (res.headersSent) res.destroy();
    else if (page) sendHtml(res, 500, errorPage('The sign-in failed on the server.'));
    else res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":"internal"}');
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const full = req.url ?? '/';
    let rest = stripMount(full, mountPath);
    if (rest === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    const match = /^\/interaction\/([^/?#]+)(?:\?.*)?$/.exec(rest);
    if (match?.[1] !== undefined) {
      interaction(req, res, match[1]).catch((err: unknown) => fail(res, err, true));
      return;
    }
    if (management !== undefined) {
      const path = rest.replace(/\?.*$/, '');
      if (path === ONE_TIME_TOKENS_PATH) {
        handleOneTimeTokenRequest(req, res, {
          provider,
          clientId: management.clientId,
          resource: management.resource,
          tokens: oneTimeTokens,
          now: () => clock.wallNow(),
        }).catch((err: unknown) => fail(res, err, false));
        return;
      }
      // Logto's token endpoint is `<endpoint>/oidc/token`: with SVC_LOGTO_ENDPOINT=<issuer> it is this one.
      if (path === LOGTO_TOKEN_PATH) rest = `/token${rest.slice(path.length)}`;
    }
    // connect/express mounting convention, read by oidc-provider when it builds its own URLs.
    (req as IncomingMessage & { originalUrl?: string }).originalUrl = full;
    req.url = rest;
    callback(req, res);
  };

  return {
    issuer: options.issuer,
    mountPath,
    audience: options.audience,
    clientId: options.clientId,
    get provider() {
      return provider;
    },
    handler,
    publicKeys: () => keys.map(publicJwk),
    rotateKeys(key?: JWK): string {
      const next = key ?? generateSigningKey(requireSigningKey(keys[0], 'signing key'));
      requireSigningKey(next, 'rotateKeys key');
      if (keys.some((k) => k.kid === next.kid))
        throw new TypeError(`rotateKeys key: kid ${next.kid} is in use`);
      keys.unshift(next);
      provider = build();
      callback = provider.callback();
      options.onSigningKeysChanged?.([...keys]);
      return next.kid as string;
    },
    issueOneTimeToken: (email, { expiresInSec }) => oneTimeTokens.issue(email, expiresInSec),
    close: () => store.close(),
  };
}

const SIGNING_ALGORITHMS: ReadonlySet<string> = new Set<SigningAlgorithm>(['ES256', 'RS256', 'Ed25519']);

/**
 * Checks that `key` is a private signing JWK with a kid and a supported alg; returns the alg.
 *
 * @throws {TypeError} naming `where` and what is missing.
 */
export function requireSigningKey(key: JWK | undefined, where: string): SigningAlgorithm {
  if (key === undefined || typeof key.kid !== 'string' || key.kid === '') {
    throw new TypeError(`${where}: expected a JWK with a kid`);
  }
  if (typeof key.alg !== 'string' || !SIGNING_ALGORITHMS.has(key.alg)) {
    throw new TypeError(
      `${where}: alg ${String(key.alg)} is not one of ${[...SIGNING_ALGORITHMS].join(', ')}`,
    );
  }
  if (key.d === undefined && key.priv === undefined) throw new TypeError(`${where}: expected a private key`);
  return key.alg as SigningAlgorithm;
}

/**
 * Skips the consent step for the one first-party client: the grant holds every OpenID scope and claim
 * the request asks for and every requested resource (whose scope is empty).
 */
async function grantEverythingRequested(ctx: KoaContextWithOIDC): Promise<Grant | undefined> {
  const { client, session, provider } = ctx.oidc;
  const accountId = session?.accountId;
  if (client === undefined || accountId === undefined) return undefined;
  const grantId = ctx.oidc.result?.consent?.grantId ?? session?.grantIdFor(client.clientId);
  const existing = grantId === undefined ? undefined : await provider.Grant.find(grantId);
  const grant =
    existing !== undefined && existing.accountId === accountId
      ? existing
      : new provider.Grant({ accountId, clientId: client.clientId });
  const scope = [...ctx.oidc.requestParamOIDCScopes].join(' ');
  if (scope !== '') grant.addOIDCScope(scope);
  const claims = [...ctx.oidc.requestParamClaims];
  if (claims.length > 0) grant.addOIDCClaims(claims);
  for (const [indicator, server] of Object.entries(ctx.oidc.resourceServers ?? {})) {
    grant.addResourceScope(indicator, server.scope);
  }
  await grant.save();
  return grant;
}

function stripMount(url: string, mountPath: string): string | undefined {
  if (mountPath === '') return url;
  if (url === mountPath) return '/';
  const next = url.charAt(mountPath.length);
  if (!url.startsWith(mountPath) || (next !== '/' && next !== '?')) return undefined;
  const rest = url.slice(mountPath.length);
  return rest.startsWith('?') ? `/${rest}` : rest;
}

function publicJwk(key: JWK): JWK {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = key;
  return pub;
}

function errorPage(message: string): string {
  return renderLoginPage({ action: '', users: [], allowTypedNames: false, message });
}
