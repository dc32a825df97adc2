/**
 * The signed-in person, for every page: who they are (`GET /api/v1/me`), their organisations and
 * roles, and the actions sign in, sign out and "sign in again" after the session ended (which
 * returns to the same page).
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { User, UserManager } from 'oidc-client-ts';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { api, configureApi, unwrap } from './api/client.js';
import type { paths } from './api/schema.js';
import { type ConsoleConfig, type InvitationLink, signIn } from './session.js';

/** `GET /api/v1/me`'s answer. */
export type Me = paths['/api/v1/me']['get']['responses'][200]['content']['application/json'];
/** One of the caller's organisations. */
export type MyOrg = Me['orgs'][number];
/** An organisation role. */
export type Role = MyOrg['role'];

/** What every page may ask of the session. */
export interface Session {
  readonly config: ConsoleConfig;
  /** The signed-in person's tokens, or `null` when signed out. */
  readonly user: User | null;
  /** Whether the API answered 401: the page stays, a dialog offers to sign in again. */
  readonly ended: boolean;
  signIn(options?: { returnTo?: string; invitation?: InvitationLink }): Promise<void>;
  signOut(): Promise<void>;
}

const SessionContext = createContext<Session | undefined>(undefined);

/** Provides the {@link Session}; `initialUser` is what loading the page found. */
export function SessionProvider(props: {
  readonly config: ConsoleConfig;
  readonly manager: UserManager;
  readonly initialUser: User | null;
  readonly children: ReactNode;
}): ReactNode {
  const { config, manager } = props;
  const [user, setUser] = useState<User | null>(props.initialUser);
  const [ended, setEnded] = useState(false);
  const queries = useQueryClient();

  // The client reads the current tokens on each request.
  configureApi({
    credentials: () =>
      user === null ? undefined : { accessToken: user.access_token, idToken: user.id_token },
    onUnauthorised: () => setEnded(true),
  });

  useEffect(() => {
    const loaded = (next: User) => {
      setUser(next);
      setEnded(false);
    };
    const expired = () => setEnded(true);
    manager.events.addUserLoaded(loaded);
    manager.events.addAccessTokenExpired(expired);
    manager.events.addSilentRenewError(expired);
    return () => {
      manager.events.removeUserLoaded(loaded);
      manager.events.removeAccessTokenExpired(expired);
      manager.events.removeSilentRenewError(expired);
    };
  }, [manager]);

  const doSignIn = useCallback(
    (options: { returnTo?: string; invitation?: InvitationLink } = {}) => signIn(manager, options),
    [manager],
  );
  const signOut = useCallback(async () => {
    await manager.removeUser();
    queries.clear();
    setUser(null);
    setEnded(false);
    location.hash = '#/';
  }, [manager, queries]);

  const session = useMemo<Session>(
    () => ({ config, user, ended, signIn: doSignIn, signOut }),
    [config, user, ended, doSignIn, signOut],
  );
  return <SessionContext.Provider value={session}>{props.children}</SessionContext.Provider>;
}

/** The {@link Session}. */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === undefined) throw new TypeError('useSession() outside <SessionProvider>');
  return session;
}

/** The signed-in person (`GET /api/v1/me`); disabled while signed out. */
export function useMe() {
  const { user } = useSession();
  return useQuery({
    queryKey: ['me', user?.profile.sub],
    enabled: user !== null,
    queryFn: () => unwrap(api.GET('/api/v1/me')),
    staleTime: 30_000,
  });
}
