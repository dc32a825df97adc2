/**
 * Signing in to the console: OpenID Connect authorization code with PKCE through `oidc-client-ts`,
 * against the issuer that `GET /api/v1/console-config` names. Tokens live in this tab's session
 * storage only. The access token is issued for the API resource; the API also wants the ID token
 * (`x-svc-id-token`, spec 5.1 rule 4).
 *
 * A login remembers where it began (the page's fragment) and comes back there. An invitation link
 * (`#/invite?email=&token=&ott=`) begins the login with `login_hint` and `one_time_token`, and the
 * invitation token rides in the login's state so the app accepts it once signed in.
 */
import { type User, UserManager, WebStorageStateStore } from 'oidc-client-ts';

/** What the console needs before anyone signs in (`GET /api/v1/console-config`). */
export interface ConsoleConfig {
  readonly issuer: string;
  readonly clientId: string;
  readonly apiResource: string;
  readonly scopes: readonly string[];
  readonly provisioning: 'self-serve' | 'invite-only' | 'default-org';
  readonly developmentProvider: boolean;
  readonly anonymous: boolean;
  readonly openEnrolment: boolean;
}

/** What a login carries through the identity provider and back. */
export interface LoginState {
  /** The fragment to return to, e.g. `#/orgs/…/audit`. */
  readonly returnTo: string;
  /** An invitation to accept once signed in. */
  readonly invitationToken?: string;
}

/** An invitation link's parameters. */
export interface InvitationLink {
  readonly email: string;
  readonly token: string;
  readonly ott?: string;
}

/** Where the console's plain pilot page (`/pilot/`) looks for the signed-in person's tokens. */
const PILOT_TOKENS_KEY = 'svc.tokens';

/** Reads the console configuration. */
export async function fetchConsoleConfig(): Promise<ConsoleConfig> {
  const response = await fetch('/api/v1/console-config');
  if (!response.ok) {
    throw new Error(
      `svc-cloud did not give the console its configuration (HTTP ${response.status}); is svc-cloud running?`,
    );
  }
  return (await response.json()) as ConsoleConfig;
}

/** The console's own address without query or fragment: the redirect URI registered for it. */
export function consoleAddress(): string {
  return `${location.origin}${location.pathname}`;
}

/** The invitation in the current fragment, or `undefined`. */
export function invitationInFragment(hash = location.hash): InvitationLink | undefined {
  const prefix = '#/invite?';
  if (!hash.startsWith(prefix)) return undefined;
  const params = new URLSearchParams(hash.slice(prefix.length));
  const email = params.get('email');
  const token = params.get('token');
  if (email === null || email === '' || token === null || token === '') return undefined;
  const ott = params.get('ott');
  return { email, token, ...(ott !== null && ott !== '' && { ott }) };
}

/** The user manager for `config`: this tab's session storage, refresh-token renewal. */
export function createUserManager(config: ConsoleConfig): UserManager {
  const store = new WebStorageStateStore({ store: sessionStorage });
  const manager = new UserManager({
    authority: config.issuer,
    client_id: config.clientId,
    redirect_uri: consoleAddress(),
    post_logout_redirect_uri: consoleAddress(),
    response_type: 'code',
    scope: config.scopes.join(' '),
    resource: config.apiResource,
    // The code exchange and each renewal ask for the API resource too, so the access token is a
    // JWT for the API.
    extraTokenParams: { resource: config.apiResource },
    userStore: store,
    stateStore: store,
    loadUserInfo: false,
    automaticSilentRenew: true,
    // No iframe renewal: the pages forbid framing; renewal uses the refresh token.
    monitorSession: false,
  });
  manager.events.addUserLoaded(mirrorForPilotPage);
  manager.events.addUserUnloaded(() => sessionStorage.removeItem(PILOT_TOKENS_KEY));
  return manager;
}

/** Keeps the plain pilot page's copy of the tokens (it mints pilot tokens with them) current. */
export function mirrorForPilotPage(user: User): void {
  if (user.id_token === undefined) return;
  sessionStorage.setItem(
    PILOT_TOKENS_KEY,
    JSON.stringify({ accessToken: user.access_token, idToken: user.id_token }),
  );
}

/** Begins a login that returns to `returnTo` (default: the current page). */
export async function signIn(
  manager: UserManager,
  options: { returnTo?: string; invitation?: InvitationLink } = {},
): Promise<void> {
  const { invitation } = options;
  const state: LoginState = {
    returnTo: options.returnTo ?? (invitation !== undefined ? '#/invite/accept' : location.hash || '#/'),
    ...(invitation !== undefined && { invitationToken: invitation.token }),
  };
  await manager.signinRedirect({
    state,
    ...(invitation !== undefined && { login_hint: invitation.email }),
    ...(invitation?.ott !== undefined && { extraQueryParams: { one_time_token: invitation.ott } }),
  });
}

/** The outcome of a page load that may be the identity provider's answer. */
export type LoadResult =
  | { readonly kind: 'signed-in'; readonly user: User; readonly state: LoginState | undefined }
  | { readonly kind: 'signed-out' }
  | { readonly kind: 'refused'; readonly message: string };

/**
 * Finishes a login when this load is the provider's answer (`?code=` or `?error=`), then returns
 * the signed-in user, if any. The answer's query is removed from the address bar, and the
 * fragment the login began on is put back.
 */
export async function loadSession(manager: UserManager): Promise<LoadResult> {
  const params = new URLSearchParams(location.search);
  if (params.has('error')) {
    history.replaceState(null, '', `${consoleAddress()}${location.hash}`);
    const reason = params.get('error_description') ?? params.get('error') ?? 'no reason given';
    return { kind: 'refused', message: `The identity provider refused the sign-in: ${reason}` };
  }
  if (params.has('code') && params.has('state')) {
    try {
      const user = await manager.signinRedirectCallback();
      const state = user.state as LoginState | undefined;
      history.replaceState(null, '', `${consoleAddress()}${state?.returnTo ?? '#/'}`);
      return { kind: 'signed-in', user, state };
    } catch (err) {
      history.replaceState(null, '', consoleAddress());
      return {
        kind: 'refused',
        message: `The sign-in could not be finished (${err instanceof Error ? err.message : String(err)}); sign in again.`,
      };
    }
  }
  const user = await manager.getUser();
  if (user === null) return { kind: 'signed-out' };
  if (user.expired === true) {
    // A refresh token renews it; without one (or when the provider refuses), sign in again.
    try {
      const renewed = await manager.signinSilent();
      if (renewed !== null) return { kind: 'signed-in', user: renewed, state: undefined };
    } catch {
      // Falls through to signed out: the sign-in page says the session ended.
    }
    await manager.removeUser();
    return { kind: 'signed-out' };
  }
  mirrorForPilotPage(user);
  return { kind: 'signed-in', user, state: undefined };
}
