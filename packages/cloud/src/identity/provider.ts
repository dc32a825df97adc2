import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Logger, silentLogger } from '@svc/runtime';
import type { JWK } from 'jose';
import Provider, {
  type Account,
  type Configuration,
  errors,
  type Grant,
  type KoaContextWithOIDC,
  type JWK as ProviderJwk,
} from 'oidc-provider';
import { type DevUser, renderLoginPage, TYPED_NAME } from './login-page.js';
import { createMemoryAdapter } from './memory-adapter.js';

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
}

/** Group claim name used when none is configured. */
export const DEFAULT_GROUP_CLAIM = 'groups';

const TYPED_SUB_PREFIX = 'dev-';
const TYPED_EMAIL_DOMAIN = 'example.test';
const MAX_FORM_BYTES = 8 * 1024;
const DAY_SEC = 86_400;
/** Lifetimes in seconds, set explicitly (oidc-provider nags about its defaults). */
const TTL = {
  AccessToken: 3600,
  AuthorizationCode: 60,
  IdToken: 3600,
  Interaction: 3600,
  Grant: 14 * DAY_SEC,
  Session: 14 * DAY_SEC,
} as const;

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

/**
 * Builds an OpenID provider (oidc-provider v9) for development and tests: one public client with PKCE,
 * access tokens that are JWTs for the API resource carrying only `sub` (spec 5.1.2 and 5.1.4), ID tokens
 * with `email`, `email_verified` and the group claim, and a plain HTML login page that logs in a known
 * or typed user and grants what the client asked for without a consent step.
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
  const users = [...(options.users ?? [])];
  const allowTypedNames = options.allowTypedNames ?? false;
  const keys: JWK[] = [...(options.signingKeys ?? [generateSigningKey(options.signingAlgorithm)])];
  if (keys.length === 0)
    throw new TypeError('createOidcProvider option signingKeys: expected at least one key');
  keys.forEach((key, i) => {
    requireSigningKey(key, `createOidcProvider option signingKeys[${i}]`);
  });
  const logger = options.logger ?? silentLogger;
  const onServerError =
    options.onServerError ??
    ((err: Error) => logger.error({ err }, 'the development identity provider failed to answer'));
  const cookieKeys = [...(options.cookieKeys ?? [randomBytes(32).toString('base64url')])];
  const adapter = createMemoryAdapter();

  const findUser = (sub: string): DevUser | undefined => {
    const known = users.find((user) => user.sub === sub);
    if (known !== undefined || !allowTypedNames || !sub.startsWith(TYPED_SUB_PREFIX)) return known;
    const name = sub.slice(TYPED_SUB_PREFIX.length);
    return TYPED_NAME.test(name) ? typedUser(name) : undefined;
  };

  const build = (): Provider => {
    const signingAlg = requireSigningKey(keys[0], 'signing key');
    const configuration: Configuration = {
      adapter,
      clients: [
        {
          client_id: options.clientId,
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code'],
          response_types: ['code'],
          redirect_uris: [...options.redirectUris],
          post_logout_redirect_uris: [...(options.postLogoutRedirectUris ?? [])],
          id_token_signed_response_alg: signingAlg,
        },
      ],
      jwks: { keys: keys as ProviderJwk[] },
      cookies: { keys: cookieKeys },
      pkce: { required: () => true },
      ttl: TTL,
      conformIdTokenClaims: false,
      claims: {
        openid: ['sub', groupClaim],
        email: ['email', 'email_verified'],
        profile: ['name'],
      },
      features: {
        devInteractions: { enabled: false },
        resourceIndicators: {
          enabled: true,
          defaultResource: (_ctx, _client, oneOf) =>
            oneOf?.[0] ?? (options.resourceByDefault === false ? undefined : options.audience),
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resourceIndicator) => {
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
        url: (_ctx, interaction) => `${mountPath}/interaction/${interaction.uid}`,
      },
      loadExistingGrant: grantEverythingRequested,
      findAccount: (_ctx, sub): Account | undefined => {
        const user = findUser(sub);
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
        renderLoginPage({ action: `${mountPath}/interaction/${uid}`, users, allowTypedNames, message }),
      );

    if (req.method === 'GET' || req.method === 'HEAD') {
      page(200);
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'GET, HEAD, POST' }).end();
      return;
    }
    const form = await readForm(req);
    if (form === undefined) {
      page(413, 'The form was too large.');
      return;
    }
    const accountId = chooseAccount(form, users, allowTypedNames);
    if (accountId === undefined) {
      page(
        400,
        allowTypedNames ? 'Pick a user or type a name of letters, digits, ".", "_" or "-".' : 'Pick a user.',
      );
      return;
    }
    await current.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const full = req.url ?? '/';
    const rest = stripMount(full, mountPath);
    if (rest === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    const match = /^\/interaction\/([^/?#]+)(?:\?.*)?$/.exec(rest);
    if (match?.[1] !== undefined) {
      interaction(req, res, match[1]).catch((err: unknown) => {
        onServerError(err instanceof Error ? err : new Error(String(err)));
        if (!res.headersSent) sendHtml(res, 500, errorPage('The sign-in failed on the server.'));
        else res.destroy();
      });
      return;
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
      return next.kid as string;
    },
  };
}

const SIGNING_ALGORITHMS: ReadonlySet<string> = new Set<SigningAlgorithm>(['ES256', 'RS256', 'Ed25519']);

/** Checks that `key` is a private signing JWK with a kid and a supported alg; returns the alg. */
function requireSigningKey(key: JWK | undefined, where: string): SigningAlgorithm {
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

/** The synthetic user of a typed name. */
function typedUser(name: string): DevUser {
  return {
    sub: `${TYPED_SUB_PREFIX}${name}`,
    email: `${name}@${TYPED_EMAIL_DOMAIN}`,
    emailVerified: true,
    name,
  };
}

function userClaims(user: DevUser, groupClaim: string): { sub: string; [claim: string]: unknown } {
  const claims: { sub: string; [claim: string]: unknown } = {
    sub: user.sub,
    email: user.email,
    email_verified: user.emailVerified,
  };
  if (user.name !== undefined) claims.name = user.name;
  if (user.groups !== undefined) claims[groupClaim] = [...user.groups];
  return claims;
}

/**
 * The account a login form names: a known user's `sub` button, or a typed name (dev mode). A typed name
 * equal to a known user's name or sub logs in that user.
 */
function chooseAccount(
  form: URLSearchParams,
  users: readonly DevUser[],
  allowTypedNames: boolean,
): string | undefined {
  const sub = form.get('sub');
  if (sub !== null) return users.find((user) => user.sub === sub)?.sub;
  const typed = form.get('name');
  if (!allowTypedNames || typed === null) return undefined;
  const name = typed.trim().toLowerCase();
  if (!TYPED_NAME.test(name)) return undefined;
  const known = users.find((user) => user.sub.toLowerCase() === name || user.name?.toLowerCase() === name);
  return known?.sub ?? typedUser(name).sub;
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

async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.byteLength;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
    'x-frame-options': 'DENY',
  });
  res.end(html);
}

function errorPage(message: string): string {
  return renderLoginPage({ action: '', users: [], allowTypedNames: false, message });
}
