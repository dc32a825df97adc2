import { isIP } from 'node:net';
import { CodedError, codedErrorGuard, redactUrl } from '@svc/runtime';
import { z } from 'zod';

/** The closed list of roles, lowest first (architecture page): each includes the ones before it. */
export const ROLES = ['viewer', 'operator', 'admin', 'owner'] as const;
/** A member's role in an org. */
export type Role = (typeof ROLES)[number];

/** Behaviour on a user's first login (spec 5.1.6). */
export const PROVISIONING_POLICIES = ['self-serve', 'invite-only', 'default-org'] as const;
/** One of {@link PROVISIONING_POLICIES}. */
export type ProvisioningPolicy = (typeof PROVISIONING_POLICIES)[number];

/** One problem with the environment: the variable and what was wrong with it. */
export interface ConfigIssue {
  readonly variable: string;
  readonly message: string;
}

/** The code of {@link CloudConfigError}: the environment does not configure a service. */
export type CloudConfigErrorCode = 'invalid-config';

/** The environment cannot configure a service; `issues` names every bad variable, not just the first. */
export class CloudConfigError extends CodedError<CloudConfigErrorCode> {
  override readonly name = 'CloudConfigError';
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(
      'invalid-config',
      `svc-cloud cannot start:\n  ${issues.map((i) => `${i.variable}: ${i.message}`).join('\n  ')}`,
    );
    this.issues = issues;
  }
}

/** True when `err` is a {@link CloudConfigError}. */
export const isCloudConfigError = codedErrorGuard(CloudConfigError);

/** Where humans are authenticated: an external OIDC issuer, or the embedded development provider. */
export type IdentityConfig =
  | {
      readonly kind: 'external';
      readonly issuer: string;
      readonly audience: string;
      readonly clientId: string;
      readonly jwksUri?: string;
      readonly userinfoUri?: string;
    }
  | {
      /** No issuer configured: `svc-cloud` serves its own provider under `/dev-oidc` (never otherwise). */
      readonly kind: 'development';
      readonly issuer: string;
      readonly audience: string;
      readonly clientId: string;
    };

/** The provider-specific invitation step (spec 5.1.7 and 5.1.9). */
export type InvitationProviderConfig =
  | { readonly kind: 'none' }
  | {
      readonly kind: 'logto';
      /** Base URL of the Logto tenant, e.g. `https://auth.example.com`. */
      readonly endpoint: string;
      readonly m2mClientId: string;
      readonly m2mClientSecret: string;
      /** Resource indicator of the management API (Logto: `https://<tenant>.logto.app/api` or `https://default.logto.app/api`). */
      readonly managementResource: string;
    };

/** Validated, frozen configuration of one `svc-cloud` process. */
export interface CloudConfig {
  readonly host: string;
  readonly port: number;
  /** Public base URL, no trailing slash: the address browsers and robots use. */
  readonly publicUrl: string;
  /** Where invitation links point (`<console>#/invite?...`), no trailing slash. */
  readonly consoleUrl: string;
  /** PostgreSQL when set; otherwise the embedded database in {@link CloudConfig.dataDir}. */
  readonly databaseUrl?: string;
  readonly dataDir: string;
  readonly logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  readonly provisioning: ProvisioningPolicy;
  /** Name of the one org of `default-org`. */
  readonly defaultOrgName: string;
  readonly identity: IdentityConfig;
  /** Claim carrying the user's group or role (`default-org`). */
  readonly roleClaim?: string;
  /** Claim value → role; values not listed give no access. */
  readonly roleMap: ReadonlyMap<string, Role>;
  readonly invitationProvider: InvitationProviderConfig;
  /** How long an invitation stays valid, hours. */
  readonly invitationTtlHours: number;
  readonly devAllowAnonymous: boolean;
  readonly devOpenEnrolment: boolean;
  /**
   * `SVC_DEMO=1` (set by `npm start` unless `--no-demo`): prepare the demonstration robot's org and
   * enrolment token (`src/demo.ts`). Only with the development provider.
   */
  readonly demo: boolean;
  /** Requests per minute one client (one credential, or one address without) may make; 0 turns the limit off. */
  readonly rateLimitPerMinute: number;
  /** Lifetime of a pilot session token when the caller asks none, seconds (a caller may ask 30..900). */
  readonly sessionTokenTtlSeconds: number;
  /** How long one session signing key signs before the next one takes over, hours. */
  readonly sessionKeyRotationHours: number;
  /**
   * The relay of last resort on this node (`SVC_RELAY`, default on): the address parties reach it
   * at (`SVC_RELAY_HOST`, default the host of the public URL), the address its UDP ports bind
   * (`SVC_RELAY_BIND`, default `SVC_HOST`) and their range (`SVC_RELAY_PORTS`, `min-max`, default
   * any free port). `undefined` when off.
   */
  readonly relay?: {
    readonly publicHost: string;
    readonly bindHost: string;
    readonly ports?: { readonly min: number; readonly max: number };
  };
  /**
   * STUN and TURN servers for WebRTC sessions: `SVC_STUN_URLS` (comma-separated `stun:host:port`),
   * `SVC_TURN_URLS` (comma-separated `turn:host:port?transport=udp|tcp` and `turns:host:port`)
   * with `SVC_TURN_SECRET` (coturn's `static-auth-secret`, at least 16 characters) and
   * `SVC_TURN_TTL_SECONDS` (how long minted credentials last, default 3600).
   */
  readonly ice: {
    readonly stunUrls: readonly string[];
    readonly turn?: {
      readonly urls: readonly string[];
      readonly secret: string;
      readonly ttlSeconds: number;
    };
  };
}

/** Defaults, in one place. */
export const CLOUD_DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  dataDir: './svc-data',
  logLevel: 'info',
  provisioning: 'self-serve',
  defaultOrgName: 'Default',
  devClientId: 'svc-console',
  invitationTtlHours: 7 * 24,
  rateLimitPerMinute: 600,
  sessionTokenTtlSeconds: 300,
  sessionKeyRotationHours: 24,
} as const;

/** Shortest pilot session token a caller may ask for, seconds. */
export const MIN_SESSION_TOKEN_TTL_SECONDS = 30;
/** Longest pilot session token, seconds: a token outlives neither this nor its key's publication. */
export const MAX_SESSION_TOKEN_TTL_SECONDS = 900;

/** Path under which the embedded development provider is served. */
export const DEV_PROVIDER_PATH = '/dev-oidc';

const httpUrl = z.string().refine((v) => {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}, 'expected an http:// or https:// URL');

/**
 * Parses `SVC_OIDC_ROLE_MAP`: comma-separated `value=role` pairs, e.g. `robotics-admins=admin,
 * robotics-ops=operator,everyone=viewer`. Whitespace around items is ignored; a claim value may not
 * contain `,` or `=`. Roles must be one of {@link ROLES}; a value listed twice is an error.
 *
 * @throws {CloudConfigError} naming `SVC_OIDC_ROLE_MAP` and the first bad item.
 */
export function parseRoleMap(text: string): Map<string, Role> {
  const bad = (message: string) => new CloudConfigError([{ variable: 'SVC_OIDC_ROLE_MAP', message }]);
  const map = new Map<string, Role>();
  for (const item of text.split(',')) {
    const trimmed = item.trim();
    if (trimmed === '') continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0 || eq === trimmed.length - 1) {
      throw bad(`"${trimmed}" is not a value=role pair (example: ops-team=operator)`);
    }
    const value = trimmed.slice(0, eq).trim();
    const role = trimmed.slice(eq + 1).trim();
    if (!(ROLES as readonly string[]).includes(role)) {
      throw bad(`"${role}" (for "${value}") is not a role; expected one of ${ROLES.join(', ')}`);
    }
    if (map.has(value)) throw bad(`"${value}" is mapped twice`);
    map.set(value, role as Role);
  }
  return map;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The host of a URL without IPv6 brackets. */
function hostOf(url: string): string {
  const { hostname } = new URL(url);
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Reads the service's configuration from the environment once, at start. Every problem is
 * collected and reported together, each naming its variable. The result is frozen.
 *
 * @throws {CloudConfigError} naming every bad variable with what was wrong (secrets redacted).
 */
export function loadCloudConfig(env: Env): CloudConfig {
  const issues: ConfigIssue[] = [];
  const get = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const flag = (name: string): boolean => {
    const v = get(name);
    if (v === undefined || v === '0') return false;
    if (v === '1') return true;
    issues.push({ variable: name, message: `"${v}" is not 1 or 0` });
    return false;
  };
  const url = (name: string): string | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    const r = httpUrl.safeParse(v);
    if (!r.success) {
      issues.push({ variable: name, message: `"${redactUrl(v)}" is not an http:// or https:// URL` });
      return undefined;
    }
    return v.replace(/\/+$/, '');
  };
  const oneOf = <T extends string>(name: string, values: readonly T[], fallback: T): T => {
    const v = get(name);
    if (v === undefined) return fallback;
    if ((values as readonly string[]).includes(v)) return v as T;
    issues.push({ variable: name, message: `"${v}" is not one of ${values.join(', ')}` });
    return fallback;
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const v = get(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) {
      issues.push({ variable: name, message: `"${v}" is not an integer in ${min}..${max}` });
      return fallback;
    }
    return n;
  };

  const host = get('SVC_HOST') ?? CLOUD_DEFAULTS.host;
  const port = integer('SVC_PORT', CLOUD_DEFAULTS.port, 0, 65535);
  const publicUrl = url('SVC_PUBLIC_URL') ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const consoleUrl = url('SVC_CONSOLE_URL') ?? `${publicUrl}/console`;

  const databaseUrl = get('DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    issues.push({
      variable: 'DATABASE_URL',
      message: `"${redactUrl(databaseUrl)}" is not a postgres:// or postgresql:// URL (leave it unset for the embedded database)`,
    });
  }

  // Set but invalid still counts as set: the error names the issuer, not the variables that need it.
  const issuerSet = get('SVC_OIDC_ISSUER') !== undefined;
  const issuer = url('SVC_OIDC_ISSUER');
  const audience = get('SVC_OIDC_AUDIENCE');
  const clientId = get('SVC_OIDC_CLIENT_ID');
  const jwksUri = url('SVC_OIDC_JWKS_URI');
  const userinfoUri = url('SVC_OIDC_USERINFO_URI');
  let identity: IdentityConfig;
  if (issuerSet) {
    if (audience === undefined)
      issues.push({
        variable: 'SVC_OIDC_AUDIENCE',
        message: 'required with SVC_OIDC_ISSUER (the API resource indicator)',
      });
    if (clientId === undefined)
      issues.push({
        variable: 'SVC_OIDC_CLIENT_ID',
        message: "required with SVC_OIDC_ISSUER (the console's client id)",
      });
    identity = {
      kind: 'external',
      issuer: issuer === undefined ? '' : env.SVC_OIDC_ISSUER!.trim(),
      audience: audience ?? '',
      clientId: clientId ?? '',
      ...(jwksUri === undefined ? {} : { jwksUri }),
      ...(userinfoUri === undefined ? {} : { userinfoUri }),
    };
  } else {
    // The embedded provider exists only when no issuer is configured: settings that only make
    // sense with an external provider are a mistake to point out, not to ignore.
    for (const name of [
      'SVC_OIDC_AUDIENCE',
      'SVC_OIDC_CLIENT_ID',
      'SVC_OIDC_JWKS_URI',
      'SVC_OIDC_USERINFO_URI',
    ]) {
      if (get(name) !== undefined)
        issues.push({
          variable: name,
          message:
            'set without SVC_OIDC_ISSUER; set the issuer too, or unset it to use the embedded development provider',
        });
    }
    identity = {
      kind: 'development',
      issuer: `${publicUrl}${DEV_PROVIDER_PATH}`,
      audience: `${publicUrl}/api`,
      clientId: CLOUD_DEFAULTS.devClientId,
    };
  }

  const provisioning = oneOf('SVC_PROVISIONING', PROVISIONING_POLICIES, CLOUD_DEFAULTS.provisioning);
  const roleClaim = get('SVC_OIDC_ROLE_CLAIM');
  let roleMap = new Map<string, Role>();
  const roleMapText = get('SVC_OIDC_ROLE_MAP');
  if (roleMapText !== undefined) {
    try {
      roleMap = parseRoleMap(roleMapText);
    } catch (err) {
      if (!isCloudConfigError(err)) throw err;
      issues.push(...err.issues);
    }
  }
  if (provisioning === 'default-org') {
    if (roleClaim === undefined)
      issues.push({
        variable: 'SVC_OIDC_ROLE_CLAIM',
        message: 'required with SVC_PROVISIONING=default-org (the claim naming the group)',
      });
    if (roleMapText === undefined)
      issues.push({
        variable: 'SVC_OIDC_ROLE_MAP',
        message: 'required with SVC_PROVISIONING=default-org (example: ops-team=operator,admins=admin)',
      });
  }

  let invitationProvider: InvitationProviderConfig = { kind: 'none' };
  const providerKind = oneOf('SVC_INVITATION_PROVIDER', ['none', 'logto'] as const, 'none');
  if (providerKind === 'logto') {
    const endpoint = url('SVC_LOGTO_ENDPOINT');
    const m2mClientId = get('SVC_LOGTO_M2M_CLIENT_ID');
    const m2mClientSecret = get('SVC_LOGTO_M2M_CLIENT_SECRET');
    for (const [name, v] of [
      ['SVC_LOGTO_ENDPOINT', endpoint],
      ['SVC_LOGTO_M2M_CLIENT_ID', m2mClientId],
      ['SVC_LOGTO_M2M_CLIENT_SECRET', m2mClientSecret],
    ] as const) {
      if (v === undefined)
        issues.push({ variable: name, message: 'required with SVC_INVITATION_PROVIDER=logto' });
    }
    invitationProvider = {
      kind: 'logto',
      endpoint: endpoint ?? '',
      m2mClientId: m2mClientId ?? '',
      m2mClientSecret: m2mClientSecret ?? '',
      managementResource: get('SVC_LOGTO_MANAGEMENT_RESOURCE') ?? 'https://default.logto.app/api',
    };
  }

  const demo = flag('SVC_DEMO');
  if (demo && issuerSet)
    issues.push({
      variable: 'SVC_DEMO',
      message:
        'the demo robot runs only with the embedded development provider; unset SVC_OIDC_ISSUER, or set SVC_DEMO=0',
    });

  const relayOn = oneOf('SVC_RELAY', ['on', 'off'] as const, 'on') === 'on';
  const relayBind = get('SVC_RELAY_BIND') ?? host;
  if (isIP(relayBind) === 0)
    issues.push({
      variable: 'SVC_RELAY_BIND',
      message: `"${relayBind}" is not an IP address (0.0.0.0, ::, or one of this host's)`,
    });
  let relayPorts: { min: number; max: number } | undefined;
  const portsText = get('SVC_RELAY_PORTS');
  if (portsText !== undefined) {
    const m = /^(\d{1,5})-(\d{1,5})$/.exec(portsText);
    const min = Number(m?.[1]);
    const max = Number(m?.[2]);
    if (m === null || min < 1 || max > 65535 || min > max) {
      issues.push({
        variable: 'SVC_RELAY_PORTS',
        message: `"${portsText}" is not a port range like 40000-40999`,
      });
    } else {
      relayPorts = { min, max };
    }
  }
  const relayHost = get('SVC_RELAY_HOST') ?? hostOf(publicUrl);

  const config: CloudConfig = {
    host,
    port,
    publicUrl,
    consoleUrl,
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
    dataDir: get('SVC_DATA_DIR') ?? CLOUD_DEFAULTS.dataDir,
    logLevel: oneOf(
      'SVC_LOG_LEVEL',
      ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const,
      CLOUD_DEFAULTS.logLevel,
    ),
    provisioning,
    defaultOrgName: get('SVC_DEFAULT_ORG_NAME') ?? CLOUD_DEFAULTS.defaultOrgName,
    identity,
    ...(roleClaim === undefined ? {} : { roleClaim }),
    roleMap,
    invitationProvider,
    invitationTtlHours: integer('SVC_INVITATION_TTL_HOURS', CLOUD_DEFAULTS.invitationTtlHours, 1, 24 * 90),
    devAllowAnonymous: flag('SVC_DEV_ALLOW_ANONYMOUS'),
    devOpenEnrolment: flag('SVC_DEV_OPEN_ENROLMENT'),
    demo,
    rateLimitPerMinute: integer('SVC_RATE_LIMIT_PER_MINUTE', CLOUD_DEFAULTS.rateLimitPerMinute, 0, 1_000_000),
    sessionTokenTtlSeconds: integer(
      'SVC_SESSION_TOKEN_TTL_SECONDS',
      CLOUD_DEFAULTS.sessionTokenTtlSeconds,
      MIN_SESSION_TOKEN_TTL_SECONDS,
      MAX_SESSION_TOKEN_TTL_SECONDS,
    ),
    sessionKeyRotationHours: integer(
      'SVC_SESSION_KEY_ROTATION_HOURS',
      CLOUD_DEFAULTS.sessionKeyRotationHours,
      1,
      24 * 90,
    ),
    ice: iceConfig(get, integer, issues),
    ...(relayOn
      ? {
          relay: {
            publicHost: relayHost,
            bindHost: relayBind,
            ...(relayPorts === undefined ? {} : { ports: relayPorts }),
          },
        }
      : {}),
  };
  if (issues.length > 0) throw new CloudConfigError(issues);
  return Object.freeze(config);
}

const ICE_URL = {
  stun: /^stuns?:(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):\d{1,5}$/,
  turn: /^(?:turn:(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):\d{1,5}(?:\?transport=(?:udp|tcp))?|turns:(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):\d{1,5}(?:\?transport=tcp)?)$/,
};

/** `SVC_STUN_URLS`, `SVC_TURN_URLS`, `SVC_TURN_SECRET`, `SVC_TURN_TTL_SECONDS`; problems go to `issues`. */
function iceConfig(
  get: (name: string) => string | undefined,
  integer: (name: string, fallback: number, min: number, max: number) => number,
  issues: ConfigIssue[],
): CloudConfig['ice'] {
  const list = (name: string, kind: 'stun' | 'turn', example: string): string[] => {
    const urls = (get(name) ?? '')
      .split(',')
      .map((u) => u.trim())
      .filter((u) => u !== '');
    for (const u of urls) {
      if (!ICE_URL[kind].test(u))
        issues.push({ variable: name, message: `"${u}" is not a URL like ${example}` });
    }
    return urls;
  };
  const stunUrls = list('SVC_STUN_URLS', 'stun', 'stun:stun.example.com:3478');
  const turnUrls = list(
    'SVC_TURN_URLS',
    'turn',
    'turn:turn.example.com:3478?transport=udp or turns:turn.example.com:443',
  );
  const secret = get('SVC_TURN_SECRET');
  const ttlSeconds = integer('SVC_TURN_TTL_SECONDS', 3600, 60, 86_400);
  if (turnUrls.length > 0 && (secret === undefined || secret.length < 16)) {
    issues.push({
      variable: 'SVC_TURN_SECRET',
      message:
        secret === undefined
          ? "is needed with SVC_TURN_URLS: the TURN server's static-auth-secret, which svc-cloud mints credentials with"
          : 'is shorter than 16 characters',
    });
  }
  if (turnUrls.length === 0 && secret !== undefined) {
    issues.push({
      variable: 'SVC_TURN_SECRET',
      message: 'is set but SVC_TURN_URLS is not: name the TURN servers',
    });
  }
  return {
    stunUrls,
    ...(turnUrls.length > 0 && secret !== undefined ? { turn: { urls: turnUrls, secret, ttlSeconds } } : {}),
  };
}
