import {
  type BackoffPolicy,
  type Clock,
  CodedError,
  codedErrorGuard,
  type Logger,
  retry,
  systemClock,
} from '@svc/runtime';
import type { InvitationProviderConfig } from '../config.js';

/**
 * The provider-specific step of an invitation (spec 5.1.7, 5.1.9): a provider with closed
 * registration hands out a one-time sign-in token for the invitee; one with open registration
 * needs nothing.
 */
export interface InvitationProvider {
  readonly name: string;
  /**
   * A one-time sign-in token for `email`, valid `expiresInSec`, or `undefined` when this provider
   * needs none.
   *
   * @throws {InvitationProviderError} when the provider cannot be asked.
   */
  oneTimeToken(email: string, options: { expiresInSec: number }): Promise<string | undefined>;
}

/**
 * Stable codes of {@link InvitationProviderError}.
 *
 * - `provider-unreachable`: the provider did not answer (network error or timeout, retries included).
 * - `provider-refused`: the provider answered with an error status (credentials, permissions, a failure of its own).
 * - `provider-bad-answer`: the provider answered success without what was asked for.
 */
export type InvitationProviderErrorCode = 'provider-unreachable' | 'provider-refused' | 'provider-bad-answer';

/** The provider could not mint a one-time token; the message says why and never holds a secret. */
export class InvitationProviderError extends CodedError<InvitationProviderErrorCode> {
  override readonly name = 'InvitationProviderError';
}

/** True when `err` is an {@link InvitationProviderError}, optionally with the given code. */
export const isInvitationProviderError = codedErrorGuard(InvitationProviderError);

/** For providers with open registration: no one-time token. */
export const noInvitationProvider: InvitationProvider = {
  name: 'none',
  oneTimeToken: async () => undefined,
};

/** What mints one-time sign-in tokens in process: the embedded development provider. */
export interface OneTimeTokenIssuer {
  issueOneTimeToken(email: string, options: { expiresInSec: number }): Promise<string>;
}

/**
 * The embedded development provider's own one-time sign-in tokens, minted in process (no HTTP): the
 * invitation link then signs the invitee in directly, as Logto's would (spec 5.1.7).
 */
export function developmentInvitationProvider(issuer: OneTimeTokenIssuer): InvitationProvider {
  return {
    name: 'development',
    oneTimeToken: (email, options) => issuer.issueOneTimeToken(email, options),
  };
}

/** Options of {@link LogtoInvitationProvider}. */
export interface LogtoOptions {
  /** Base URL of the Logto tenant (its OIDC issuer is `<endpoint>/oidc`). */
  readonly endpoint: string;
  readonly m2mClientId: string;
  readonly m2mClientSecret: string;
  /** Resource indicator of the management API. */
  readonly managementResource: string;
  /** Default `globalThis.fetch`. */
  readonly fetch?: typeof fetch;
  /** The M2M token's expiry is read on `wallNow()`; the waits between attempts are its timers. Default `systemClock`. */
  readonly clock?: Clock;
  /** Time limit of each call to Logto, its retries included, ms. Default 5000. */
  readonly timeoutMs?: number;
  /**
   * Attempts of each call, the first included: a network error or a 5xx answer is tried again
   * (within `timeoutMs`), a 4xx answer never. Default 3.
   */
  readonly attempts?: number;
  /** Waits between attempts (full jitter). Default 100 ms doubling up to 1 s. */
  readonly retryBackoff?: BackoffPolicy;
}

/** Short waits: the admin's invitation request is waiting on Logto's answer. */
const LOGTO_RETRY_BACKOFF: BackoffPolicy = { baseMs: 100, capMs: 1_000 };

/**
 * Logto: a machine-to-machine token from `<endpoint>/oidc/token` (client credentials for the
 * management API resource, cached until shortly before it expires), then
 * `POST <endpoint>/api/one-time-tokens` `{email, expiresIn}` answering 201 `{token, ...}`.
 */
export class LogtoInvitationProvider implements InvitationProvider {
  readonly name = 'logto';
  readonly #options: LogtoOptions;
  readonly #fetch: typeof fetch;
  readonly #clock: Clock;
  #m2m: { token: string; expiresAtMs: number } | undefined;

  /** @throws {TypeError} when `attempts` is not a whole number of at least 1. */
  constructor(options: LogtoOptions) {
    if (options.attempts !== undefined && !(Number.isInteger(options.attempts) && options.attempts >= 1)) {
      throw new TypeError(
        `LogtoInvitationProvider option attempts: expected a whole number >= 1, got ${options.attempts}`,
      );
    }
    this.#options = { ...options, endpoint: options.endpoint.replace(/\/+$/, '') };
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#clock = options.clock ?? systemClock;
  }

  /** See {@link InvitationProvider.oneTimeToken}. */
  async oneTimeToken(email: string, options: { expiresInSec: number }): Promise<string | undefined> {
    const bearer = await this.#managementToken();
    const response = await this.#call(`${this.#options.endpoint}/api/one-time-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email, expiresIn: options.expiresInSec }),
    });
    if (response.status === 401) this.#m2m = undefined;
    if (response.status !== 201 && response.status !== 200) {
      throw new InvitationProviderError(
        'provider-refused',
        `Logto refused to create a one-time token (HTTP ${response.status}); check that the M2M app has the management API role`,
      );
    }
    const body = (await response.json().catch(() => undefined)) as { token?: unknown } | undefined;
    if (typeof body?.token !== 'string' || body.token === '') {
      throw new InvitationProviderError(
        'provider-bad-answer',
        'Logto answered the one-time token request without a token',
      );
    }
    return body.token;
  }

  async #managementToken(): Promise<string> {
    if (this.#m2m !== undefined && this.#m2m.expiresAtMs - 30_000 > this.#clock.wallNow()) {
      return this.#m2m.token;
    }
    const { endpoint, m2mClientId, m2mClientSecret, managementResource } = this.#options;
    const response = await this.#call(`${endpoint}/oidc/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(m2mClientId)}:${encodeURIComponent(m2mClientSecret)}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: managementResource,
        scope: 'all',
      }).toString(),
    });
    if (response.status !== 200) {
      throw new InvitationProviderError(
        'provider-refused',
        `Logto refused the M2M credentials (HTTP ${response.status}); check SVC_LOGTO_M2M_CLIENT_ID and SVC_LOGTO_M2M_CLIENT_SECRET`,
      );
    }
    const body = (await response.json().catch(() => undefined)) as
      | { access_token?: unknown; expires_in?: unknown }
      | undefined;
    if (typeof body?.access_token !== 'string') {
      throw new InvitationProviderError(
        'provider-bad-answer',
        'Logto answered the M2M token request without an access token',
      );
    }
    const lifetime = typeof body.expires_in === 'number' ? body.expires_in : 300;
    this.#m2m = { token: body.access_token, expiresAtMs: this.#clock.wallNow() + lifetime * 1000 };
    return body.access_token;
  }

  /**
   * One call to Logto, tried again after a network error or a 5xx answer (the last attempt's
   * answer is returned whatever its status); no answer in time becomes `provider-unreachable`.
   */
  async #call(url: string, init: RequestInit): Promise<Response> {
    const signal = AbortSignal.timeout(this.#options.timeoutMs ?? 5000);
    const attempts = this.#options.attempts ?? 3;
    try {
      return await retry(
        async (attempt) => {
          const response = await this.#fetch(url, { ...init, signal });
          if (response.status >= 500 && attempt + 1 < attempts) {
            await response.body?.cancel();
            throw new InvitationProviderError('provider-refused', `Logto answered HTTP ${response.status}`);
          }
          return response;
        },
        {
          attempts,
          policy: this.#options.retryBackoff ?? LOGTO_RETRY_BACKOFF,
          clock: this.#clock,
          signal,
          retryable: () => !signal.aborted,
        },
      );
    } catch (cause) {
      throw new InvitationProviderError(
        'provider-unreachable',
        `Logto at ${new URL(url).origin} could not be reached`,
        { cause },
      );
    }
  }
}

/**
 * The invitation provider a configuration names. With the embedded development provider
 * (`development`), `none` (the default) means its own one-time tokens, so invitation links sign the
 * invitee in directly there too.
 */
export function invitationProviderFor(
  config: InvitationProviderConfig,
  development?: OneTimeTokenIssuer,
): InvitationProvider {
  switch (config.kind) {
    case 'none':
      return development === undefined ? noInvitationProvider : developmentInvitationProvider(development);
    case 'logto':
      return new LogtoInvitationProvider(config);
    default:
      return config satisfies never;
  }
}

/** A message to a person (invitations, codes). */
export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** Sends mail. The service has no real transport (spec 5.1.9): messages go to the server log. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/**
 * A {@link Mailer} that writes each message to the log. The log is redacted like every log line:
 * the secrets of an invitation link (its token, its one-time sign-in token) show as `***`; the
 * inviting admin gets the whole link in the API's answer.
 */
export function logMailer(logger: Logger): Mailer {
  return {
    async send(message) {
      logger.info(
        { mail: { to: message.to, subject: message.subject, text: message.text } },
        'mail (no transport: delivered to the log)',
      );
    },
  };
}
