/**
 * svc-cloud as a process for the console's end-to-end tests, with either identity provider a
 * deployment may have: the embedded development provider, or `oidc-provider` run on its own as
 * an external issuer (`SVC_OIDC_ISSUER`), with the same test users and login page, so one test
 * runs against both.
 */
import { createServer } from 'node:http';
import { createOidcProvider, DEV_USERS } from '@svc/cloud';
import { type CloudProcess, closeServer, freeTcpPort, listenLocal, startCloudProcess } from '@svc/testkit';

/** Which provider svc-cloud trusts. */
export type ProviderKind = 'development' | 'external';

/** Both, for `describe.each`. */
export const PROVIDERS: readonly ProviderKind[] = ['development', 'external'];

/** A running svc-cloud and, for `external`, the issuer it trusts. */
export interface ConsoleCloud {
  /** The svc-cloud process now running. */
  readonly cloud: CloudProcess;
  /** `<cloud>/console/`. */
  readonly consoleUrl: string;
  /**
   * Stops svc-cloud and starts it again on the same port, data folder and issuer with another
   * environment (as an operator changes a deployment's settings).
   */
  relaunch(env: Readonly<Record<string, string>>): Promise<void>;
  stop(): Promise<void>;
}

/** The client id the external issuer registers for the console. */
const EXTERNAL_CLIENT_ID = 'svc-console-e2e';
/** The machine-to-machine client svc-cloud mints one-time sign-in tokens with (Logto's management API shape). */
const M2M = { clientId: 'svc-cloud-m2m', clientSecret: 'm2m-secret-for-tests-only' };

/** Options of {@link startConsoleCloud}. */
export interface ConsoleCloudOptions {
  /** svc-cloud's environment (a provisioning policy, …). */
  readonly env?: Readonly<Record<string, string>>;
  /** svc-cloud's data folder, to run on one an earlier process left. Default: a fresh one. */
  readonly dataDir?: string;
}

/**
 * Starts svc-cloud trusting a `kind` provider. The external issuer runs in this test process on
 * its own port, knows the development provider's test users (Olivia owner, Alice admin, Bob
 * operator, Vera viewer, each with a `groups` claim), and mints one-time sign-in tokens for
 * invitations through a Logto-compatible management API, which svc-cloud is configured to use.
 */
export async function startConsoleCloud(
  kind: ProviderKind,
  options: ConsoleCloudOptions = {},
): Promise<ConsoleCloud> {
  const port = await freeTcpPort();
  const consoleUrl = `http://127.0.0.1:${port}/console/`;
  let issuerEnv: Record<string, string> = {};
  let closeIssuer = async () => {};
  if (kind === 'external') {
    const server = createServer();
    const issuerPort = await listenLocal(server);
    const provider = await createOidcProvider({
      issuer: `http://127.0.0.1:${issuerPort}/oidc`,
      audience: `http://127.0.0.1:${port}/api`,
      clientId: EXTERNAL_CLIENT_ID,
      redirectUris: [consoleUrl],
      postLogoutRedirectUris: [consoleUrl],
      users: DEV_USERS.map((u) => ({ ...u, groups: [...u.groups] })),
      allowTypedNames: true,
      managementApi: M2M,
    });
    server.on('request', provider.handler);
    closeIssuer = async () => {
      await closeServer(server);
      await provider.close();
    };
    issuerEnv = {
      SVC_OIDC_ISSUER: provider.issuer,
      SVC_OIDC_AUDIENCE: provider.audience,
      SVC_OIDC_CLIENT_ID: EXTERNAL_CLIENT_ID,
      SVC_INVITATION_PROVIDER: 'logto',
      SVC_LOGTO_ENDPOINT: provider.issuer,
      SVC_LOGTO_M2M_CLIENT_ID: M2M.clientId,
      SVC_LOGTO_M2M_CLIENT_SECRET: M2M.clientSecret,
    };
  }
  const launch = (env: Readonly<Record<string, string>>, dataDir: string | undefined) =>
    startCloudProcess({
      port,
      env: { ...issuerEnv, ...env, ...(dataDir !== undefined && { SVC_DATA_DIR: dataDir }) },
    });
  const started: CloudProcess[] = [];
  try {
    started.push(await launch(options.env ?? {}, options.dataDir));
  } catch (err) {
    await closeIssuer();
    throw err;
  }
  return {
    get cloud() {
      return started[started.length - 1]!;
    },
    consoleUrl,
    async relaunch(env) {
      const current = started[started.length - 1]!;
      await current.shutdown();
      started.push(await launch(env, current.dataDir));
    },
    async stop() {
      // The first process's stop removes the data folder every later one ran on.
      for (const cloud of started.reverse()) await cloud.stop();
      await closeIssuer();
    },
  };
}

/** svc-cloud's settings for the `default-org` policy with the role map of the test users' groups. */
export const DEFAULT_ORG_ENV: Readonly<Record<string, string>> = {
  SVC_PROVISIONING: 'default-org',
  SVC_OIDC_ROLE_CLAIM: 'groups',
  SVC_OIDC_ROLE_MAP: 'owners=owner,admins=admin,operators=operator,viewers=viewer',
  SVC_DEFAULT_ORG_NAME: 'Demo',
};
