import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { type CloudConfig, loadCloudConfig } from '../../src/config.js';
import type { CloudDb, Database } from '../../src/db/index.js';
import { OidcVerifier } from '../../src/identity/index.js';
import {
  type InvitationProvider,
  type MailMessage,
  noInvitationProvider,
} from '../../src/invitations/index.js';
import { type ContractViolation, checkResponses, violationReporter } from './contract.js';
import type { DatabaseBackend } from './databases.js';
import { type LoginAs, type LoginResult, TEST_AUDIENCE, TEST_CLIENT_ID, type TestProvider } from './oidc.js';

/** A signed-in person: their access token and user id. */
export interface Person {
  readonly token: string;
  readonly userId: string;
}

/** An answer of {@link TestApi.call}. */
export interface Answer {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read field by field
  readonly body: any;
}

/** What a request carries. */
export interface CallOptions {
  /** Bearer token: an access token or an API key. */
  readonly token?: string;
  readonly idToken?: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /**
   * The answer may be an event stream (`text/event-stream`): its first event's JSON is the body,
   * and the stream is closed as a client leaving would.
   */
  readonly eventStream?: boolean;
}

/** svc-cloud's HTTP app on a real database and a real OIDC provider, driven with `inject()`. */
export interface TestApi {
  readonly app: FastifyInstance;
  readonly config: CloudConfig;
  readonly database: Database;
  readonly db: CloudDb;
  /** Every message the mailer was given. */
  readonly mail: MailMessage[];
  /** The clock the app reads; tests move it. */
  now: Date;
  /**
   * Answers that broke the API's contract (see `contract.ts`). {@link TestApi.call} throws on the
   * first of its own; {@link TestApi.dispose} throws when any is left unreported.
   */
  readonly violations: ContractViolation[];
  call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, options?: CallOptions): Promise<Answer>;
  /** Logs in at the provider (the real code + PKCE flow) and calls `GET /api/v1/me` with both tokens. */
  signIn(who: LoginAs): Promise<LoginResult & { me: Answer }>;
  dispose(): Promise<void>;
}

/** Options of {@link startApi}. */
export interface StartApiOptions {
  readonly backend: DatabaseBackend;
  readonly provider: TestProvider;
  /** More environment (SVC_PROVISIONING, SVC_OIDC_ROLE_MAP, ...). */
  readonly env?: Record<string, string>;
  readonly invitationProvider?: InvitationProvider;
  /**
   * Another app's database to share instead of a fresh one of `backend` (e.g. a second app whose
   * issuer is another provider); {@link TestApi.dispose} then leaves it open for its owner.
   */
  readonly database?: Database;
  /** The app's logger; default none. */
  readonly logger?: FastifyBaseLogger;
}

/**
 * Builds the app against `provider` on a fresh database of `backend` (or on `database`). Every
 * answer is checked against the schemas its route declares (`checkResponses`).
 */
export async function startApi(options: StartApiOptions): Promise<TestApi> {
  const config = loadCloudConfig({
    SVC_OIDC_ISSUER: options.provider.issuer,
    SVC_OIDC_AUDIENCE: TEST_AUDIENCE,
    SVC_OIDC_CLIENT_ID: TEST_CLIENT_ID,
    SVC_PUBLIC_URL: 'http://127.0.0.1:8080',
    // Tests that are not about the rate limit make more requests than a client would.
    SVC_RATE_LIMIT_PER_MINUTE: '0',
    ...options.env,
  });
  const { database, dispose } =
    options.database === undefined
      ? await options.backend.create()
      : { database: options.database, dispose: async () => {} };
  const mail: MailMessage[] = [];
  const api: Partial<TestApi> & { now: Date } = { now: new Date() };
  const app = await buildApp({
    config,
    database,
    verifier: new OidcVerifier({
      issuer: config.identity.issuer,
      audience: config.identity.audience,
      clientId: config.identity.clientId,
      jwksUri: options.provider.jwksUri,
      userinfoUri: options.provider.userinfoUri,
    }),
    invitationProvider: options.invitationProvider ?? noInvitationProvider,
    mail: {
      async send(message) {
        mail.push(message);
      },
    },
    logger: options.logger ?? false,
    now: () => api.now,
  });
  const violations = checkResponses(app);
  const report = violationReporter(violations);
  const call: TestApi['call'] = async (method, url, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    if (o.idToken !== undefined) headers['x-svc-id-token'] = o.idToken;
    if (o.eventStream === true) {
      const answer = await firstEvent(app, method, url, headers);
      report();
      return answer;
    }
    const response = await app.inject({
      method,
      url,
      headers,
      ...(o.body === undefined ? {} : { payload: o.body as object }),
    });
    report();
    return { status: response.statusCode, body: response.body === '' ? undefined : response.json() };
  };
  return Object.assign(api, {
    app,
    config,
    database,
    db: database.db,
    mail,
    violations,
    call,
    async signIn(who: LoginAs) {
      const tokens = await options.provider.login(who);
      const me = await call('GET', '/api/v1/me', { token: tokens.accessToken, idToken: tokens.idToken });
      return { ...tokens, me };
    },
    async dispose() {
      await app.close();
      await dispose();
      report();
    },
  }) as TestApi;
}

/**
 * A request whose answer may be an event stream: a stream's body is its first event's JSON, read
 * as it arrives, and then the response is destroyed as a client leaving would; any other answer's
 * body is its JSON.
 */
async function firstEvent(
  app: FastifyInstance,
  method: string,
  url: string,
  headers: Record<string, string>,
): Promise<Answer> {
  const response = await app.inject({ method: method as 'GET', url, headers, payloadAsStream: true });
  const stream = response.stream();
  let text = '';
  try {
    for await (const chunk of stream) {
      text += Buffer.from(chunk as Uint8Array).toString('utf8');
      const end = text.indexOf('\n\n');
      if (end >= 0 && response.headers['content-type']?.toString().startsWith('text/event-stream')) {
        const data = text
          .slice(0, end)
          .split('\n')
          .find((line) => line.startsWith('data: '));
        return { status: response.statusCode, body: JSON.parse(data?.slice('data: '.length) ?? 'null') };
      }
    }
    return { status: response.statusCode, body: text === '' ? undefined : JSON.parse(text) };
  } finally {
    (response.raw.res as { destroy(): void }).destroy();
  }
}
