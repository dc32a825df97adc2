/**
 * `loadCloudConfig`: every bad variable is named with what was wrong, secrets never appear in the
 * message, and the embedded development provider is never chosen when an issuer is configured.
 */
import { describe, expect, it } from 'vitest';
import { type CloudConfig, CloudConfigError, loadCloudConfig } from '../src/config.js';

type Env = Record<string, string>;

/** A complete configuration with an external issuer. */
const EXTERNAL: Env = {
  SVC_OIDC_ISSUER: 'https://auth.example.com/oidc',
  SVC_OIDC_AUDIENCE: 'https://api.example.com',
  SVC_OIDC_CLIENT_ID: 'svc-console',
};

/** The error `loadCloudConfig(env)` throws; fails the test when it does not throw. */
function configError(env: Env): CloudConfigError {
  try {
    loadCloudConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(CloudConfigError);
    const error = err as CloudConfigError;
    expect(error.code).toBe('invalid-config');
    // The message a person reads names each variable with its problem.
    for (const issue of error.issues) expect(error.message).toContain(`${issue.variable}: ${issue.message}`);
    return error;
  }
  throw new Error(`loadCloudConfig accepted ${JSON.stringify(env)}`);
}

/** The variables an error names, in order. */
const variables = (err: CloudConfigError): string[] => err.issues.map((i) => i.variable);

/** The message of the issue about `variable`. */
function messageFor(err: CloudConfigError, variable: string): string {
  const issue = err.issues.find((i) => i.variable === variable);
  expect(issue, `an issue about ${variable}`).toBeDefined();
  return issue!.message;
}

describe('loadCloudConfig', () => {
  it('starts with no variables at all: embedded database, development provider, self-serve', () => {
    const config = loadCloudConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      publicUrl: 'http://127.0.0.1:8080',
      consoleUrl: 'http://127.0.0.1:8080/console',
      provisioning: 'self-serve',
      identity: {
        kind: 'development',
        issuer: 'http://127.0.0.1:8080/dev-oidc',
        clientId: 'svc-console',
      },
    });
    expect(config.databaseUrl).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it.each([
    ['SVC_PUBLIC_URL', 'ftp://files.example.com'],
    ['SVC_CONSOLE_URL', 'console.example.com'],
    ['SVC_OIDC_ISSUER', 'auth.example.com'],
    ['SVC_OIDC_JWKS_URI', 'file:///etc/jwks.json'],
    ['SVC_OIDC_USERINFO_URI', 'not a url'],
  ])('names %s when it is not an http(s) URL', (variable, value) => {
    const err = configError({ ...EXTERNAL, [variable]: value });
    expect(variables(err)).toEqual([variable]);
    expect(messageFor(err, variable)).toMatch(/is not an http:\/\/ or https:\/\/ URL/);
  });

  it('names a bad SVC_PROVISIONING with the allowed values', () => {
    const err = configError({ SVC_PROVISIONING: 'nope' });
    expect(variables(err)).toEqual(['SVC_PROVISIONING']);
    expect(messageFor(err, 'SVC_PROVISIONING')).toBe(
      '"nope" is not one of self-serve, invite-only, default-org',
    );
  });

  it.each([
    ['admins=root', /"root" \(for "admins"\) is not a role; expected one of viewer, operator, admin, owner/],
    ['admins', /"admins" is not a value=role pair/],
    ['=admin', /"=admin" is not a value=role pair/],
    ['admins=', /"admins=" is not a value=role pair/],
    ['admins=admin,admins=viewer', /"admins" is mapped twice/],
  ])('names SVC_OIDC_ROLE_MAP item %s with the reason', (map, reason) => {
    const err = configError({ SVC_OIDC_ROLE_MAP: map });
    expect(variables(err)).toEqual(['SVC_OIDC_ROLE_MAP']);
    expect(messageFor(err, 'SVC_OIDC_ROLE_MAP')).toMatch(reason);
  });

  it('reads a role map with spaces and several groups', () => {
    const config = loadCloudConfig({
      SVC_PROVISIONING: 'default-org',
      SVC_OIDC_ROLE_CLAIM: 'groups',
      SVC_OIDC_ROLE_MAP: ' robotics-admins = admin , ops=operator,,everyone=viewer ',
    });
    expect([...config.roleMap]).toEqual([
      ['robotics-admins', 'admin'],
      ['ops', 'operator'],
      ['everyone', 'viewer'],
    ]);
    expect(config.roleClaim).toBe('groups');
  });

  it.each(['SVC_OIDC_AUDIENCE', 'SVC_OIDC_CLIENT_ID', 'SVC_OIDC_JWKS_URI', 'SVC_OIDC_USERINFO_URI'])(
    'refuses %s without SVC_OIDC_ISSUER instead of ignoring it',
    (variable) => {
      const err = configError({ [variable]: 'https://api.example.com' });
      expect(variables(err)).toEqual([variable]);
      expect(messageFor(err, variable)).toMatch(/set without SVC_OIDC_ISSUER/);
    },
  );

  it('requires the audience and the client id with an issuer', () => {
    const err = configError({ SVC_OIDC_ISSUER: 'https://auth.example.com/oidc' });
    expect(variables(err)).toEqual(['SVC_OIDC_AUDIENCE', 'SVC_OIDC_CLIENT_ID']);
    expect(messageFor(err, 'SVC_OIDC_AUDIENCE')).toMatch(/required with SVC_OIDC_ISSUER/);
  });

  it('requires the role claim and the role map with default-org', () => {
    const err = configError({ SVC_PROVISIONING: 'default-org' });
    expect(variables(err)).toEqual(['SVC_OIDC_ROLE_CLAIM', 'SVC_OIDC_ROLE_MAP']);
    expect(messageFor(err, 'SVC_OIDC_ROLE_CLAIM')).toMatch(/required with SVC_PROVISIONING=default-org/);
    expect(messageFor(err, 'SVC_OIDC_ROLE_MAP')).toMatch(/required with SVC_PROVISIONING=default-org/);
    expect(
      variables(configError({ SVC_PROVISIONING: 'default-org', SVC_OIDC_ROLE_CLAIM: 'groups' })),
    ).toEqual(['SVC_OIDC_ROLE_MAP']);
  });

  it.each([
    ['another scheme', 'mysql://svc:hunter2@db.example.com:3306/svc'],
    ['no scheme', 'svc:hunter2@db.example.com:5432/svc'],
    ['a password with @ and /', 'mysql://svc:hun@ter/2@db.example.com/svc'],
    ['a password in the query', 'mysql://db.example.com/svc?user=svc&password=hunter2'],
    ['a typo in the scheme', 'postgress://svc:hunter2@db.example.com/svc'],
  ])('names a bad DATABASE_URL (%s) without printing its password', (_what, url) => {
    const err = configError({ DATABASE_URL: url });
    expect(variables(err)).toEqual(['DATABASE_URL']);
    expect(messageFor(err, 'DATABASE_URL')).toMatch(/is not a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(err.message).not.toMatch(/hunter2|hun@ter|ter\/2/);
    expect(JSON.stringify(err.issues)).not.toMatch(/hunter2|hun@ter|ter\/2/);
  });

  it('accepts a PostgreSQL URL', () => {
    const url = 'postgresql://svc:hunter2@db.example.com:5432/svc';
    expect(loadCloudConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
  });

  it('names every bad variable at once, not just the first', () => {
    const err = configError({
      SVC_PORT: '99999',
      SVC_PUBLIC_URL: 'nope',
      SVC_PROVISIONING: 'default-org',
      SVC_OIDC_ROLE_MAP: 'admins=root',
      SVC_OIDC_AUDIENCE: 'https://api.example.com',
      DATABASE_URL: 'mysql://svc:hunter2@db/svc',
      SVC_LOG_LEVEL: 'loud',
      SVC_DEV_ALLOW_ANONYMOUS: 'yes',
      SVC_INVITATION_PROVIDER: 'logto',
    });
    expect(variables(err).sort()).toEqual(
      [
        'SVC_PORT',
        'SVC_PUBLIC_URL',
        'DATABASE_URL',
        'SVC_OIDC_AUDIENCE',
        'SVC_OIDC_ROLE_MAP',
        'SVC_OIDC_ROLE_CLAIM',
        'SVC_LOGTO_ENDPOINT',
        'SVC_LOGTO_M2M_CLIENT_ID',
        'SVC_LOGTO_M2M_CLIENT_SECRET',
        'SVC_LOG_LEVEL',
        'SVC_DEV_ALLOW_ANONYMOUS',
      ].sort(),
    );
    expect(messageFor(err, 'SVC_PORT')).toBe('"99999" is not an integer in 0..65535');
    expect(err.message).not.toContain('hunter2');
    expect(err.message.split('\n')).toHaveLength(1 + err.issues.length);
  });

  describe('the embedded development provider', () => {
    const withIssuer: Env[] = [
      EXTERNAL,
      { ...EXTERNAL, SVC_DEV_ALLOW_ANONYMOUS: '1', SVC_DEV_OPEN_ENROLMENT: '1' },
      { ...EXTERNAL, SVC_OIDC_ISSUER: 'http://127.0.0.1:8080/dev-oidc' },
      {
        ...EXTERNAL,
        SVC_PUBLIC_URL: 'https://auth.example.com',
        SVC_OIDC_ISSUER: 'https://auth.example.com/dev-oidc',
      },
      { ...EXTERNAL, SVC_OIDC_ISSUER: ' https://auth.example.com/oidc/ ' },
      {
        ...EXTERNAL,
        SVC_OIDC_JWKS_URI: 'http://logto:3001/oidc/jwks',
        SVC_OIDC_USERINFO_URI: 'http://logto:3001/oidc/me',
      },
    ];

    it.each(withIssuer)('is never chosen when SVC_OIDC_ISSUER is set (%o)', (env) => {
      const config: CloudConfig = loadCloudConfig(env);
      expect(config.identity.kind).toBe('external');
      expect(config.identity.issuer).toBe(env.SVC_OIDC_ISSUER!.trim());
      expect(config.identity.audience).toBe(EXTERNAL.SVC_OIDC_AUDIENCE);
      expect(config.identity.clientId).toBe(EXTERNAL.SVC_OIDC_CLIENT_ID);
    });

    it('is not fallen back to when SVC_OIDC_ISSUER is set but invalid: only the issuer is named', () => {
      const err = configError({ ...EXTERNAL, SVC_OIDC_ISSUER: 'auth.example.com/oidc' });
      expect(variables(err)).toEqual(['SVC_OIDC_ISSUER']);
    });

    it('is chosen only without an issuer, under the public URL', () => {
      const config = loadCloudConfig({ SVC_PUBLIC_URL: 'https://svc.example.com/' });
      expect(config.identity).toEqual({
        kind: 'development',
        issuer: 'https://svc.example.com/dev-oidc',
        audience: 'https://svc.example.com/api',
        clientId: 'svc-console',
      });
    });
  });
});
