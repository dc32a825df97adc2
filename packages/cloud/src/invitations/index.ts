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

/** The provider could not mint a one-time token; the message says why and never holds a secret. */
export class InvitationProviderError extends Error {
  override readonly name = 'InvitationProviderError';
  readonly code = 'provider-failed';
}

/** For providers with open registration: no one-time token. */
export const noInvitationProvider: InvitationProvider = {
  name: 'none',
  oneTimeToken: async () => undefined,
};

/** Options of {@link LogtoInvitationProvider}. */
export interface LogtoOptions {
  /** Base URL of the Logto tenant (its OIDC issuer is `<endpoint>/oidc`). */
  readonly endpoint: string;
  readonly m2mClientId: string;
  readonly m2mClientSecret: string;
  /** Resource indicator of the management API. */
  readonly managementResource: string;
  readonly fetch?: typeof fetch;
  readonly now?: () => number;
  readonly timeoutMs?: number;
}

/**
 * Logto: a machine-to-machine token from `<endpoint>/oidc/token` (client credentials for the
 * management API resource, cached until shortly before it expires), then
 * `POST <endpoint>/api/one-time-tokens` `{email, expiresIn}` answering 201 `{token, ...}`.
 */
export class LogtoInvitationProvider implements InvitationProvider {
  readonly name = 'logto';
  readonly #options: LogtoOptions;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  #m2m: { token: string; expiresAtMs: number } | undefined;

  constructor(options: LogtoOptions) {
    this.#options = { ...options, endpoint: options.endpoint.replace(/\/+$/, '') };
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#now = options.now ?? Date.now;
  }

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
        `Logto refused to create a one-time token (HTTP ${response.status}); check that the M2M app has the management API role`,
      );
    }
    const body = (await response.json().catch(() => undefined)) as { token?: unknown } | undefined;
    if (typeof body?.token !== 'string' || body.token === '') {
      throw new InvitationProviderError('Logto answered the one-time token request without a token');
    }
    return body.token;
  }

  async #managementToken(): Promise<string> {
    if (this.#m2m !== undefined && this.#m2m.expiresAtMs - 30_000 > this.#now()) return this.#m2m.token;
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
        `Logto refused the M2M credentials (HTTP ${response.status}); check SVC_LOGTO_M2M_CLIENT_ID and SVC_LOGTO_M2M_CLIENT_SECRET`,
      );
    }
    const body = (await response.json().catch(() => undefined)) as
      | { access_token?: unknown; expires_in?: unknown }
      | undefined;
    if (typeof body?.access_token !== 'string') {
      throw new InvitationProviderError('Logto answered the M2M token request without an access token');
    }
    const lifetime = typeof body.expires_in === 'number' ? body.expires_in : 300;
    this.#m2m = { token: body.access_token, expiresAtMs: this.#now() + lifetime * 1000 };
    return body.access_token;
  }

  async #call(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.#fetch(url, {
        ...init,
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? 5000),
      });
    } catch (cause) {
      throw new InvitationProviderError(`Logto at ${new URL(url).origin} could not be reached`, { cause });
    }
  }
}

/** The invitation provider a configuration names. */
export function invitationProviderFor(config: InvitationProviderConfig): InvitationProvider {
  switch (config.kind) {
    case 'none':
      return noInvitationProvider;
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

/** A {@link Mailer} that writes each message to the log, for the operator to pass on. */
export function logMailer(log: (fields: Record<string, unknown>, msg: string) => void): Mailer {
  return {
    async send(message) {
      log(
        { mail: { to: message.to, subject: message.subject, text: message.text } },
        'mail (no transport: delivered to the log)',
      );
    },
  };
}
