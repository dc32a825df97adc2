/**
 * The invitation link's landing (`#/invite?email=…&token=…&ott=…`, spec section 4): it begins the
 * login with `login_hint` and the one-time sign-in token, and once signed in accepts the
 * invitation (`#/invite/accept`), with a clear message for an expired, used or mismatched one.
 */
import { Anchor, Button, Center, Code, Group, Loader, Paper, Stack, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { api, unwrap } from '../api/client.js';
import { useMe, useSession } from '../auth.js';
import { ErrorNote } from '../components/error-note.js';
import { navigate } from '../hash-location.js';
import { invitationInFragment } from '../session.js';

/** Where the invitation token waits between the login and its acceptance (this tab only). */
const PENDING_KEY = 'svc.console.invitation';

/** Keeps the invitation token a login carried, for `#/invite/accept`. */
export function acceptAfterSignIn(token: string): void {
  sessionStorage.setItem(PENDING_KEY, token);
}

/** `#/invite?…` and `#/invite/accept`. */
export function InvitePage(): ReactNode {
  if (location.hash.startsWith('#/invite/accept')) return <AcceptInvitation />;
  return <InvitationLanding />;
}

function Frame(props: { readonly children: ReactNode }): ReactNode {
  return (
    <Center mih="80vh">
      <Paper withBorder shadow="sm" p="xl" w={520} component="main">
        <Stack>
          <Title order={1} size="h3">
            Invitation
          </Title>
          {props.children}
        </Stack>
      </Paper>
    </Center>
  );
}

function InvitationLanding(): ReactNode {
  const { user, signIn, signOut } = useSession();
  const me = useMe();
  const [invitation] = useState(() => invitationInFragment());
  const [error, setError] = useState<unknown>();
  const started = useRef(false);

  useEffect(() => {
    if (invitation === undefined || started.current) return;
    if (user === null) {
      started.current = true;
      signIn({ invitation }).catch(setError);
    } else if (me.data !== undefined && me.data.user.email === invitation.email.toLowerCase()) {
      started.current = true;
      acceptAfterSignIn(invitation.token);
      navigate('/invite/accept', { replace: true });
    }
  }, [invitation, user, me.data, signIn]);

  if (invitation === undefined) {
    return (
      <Frame>
        <ErrorNote
          title="This invitation link is incomplete"
          error={
            new Error(
              'The link must carry the invited email and the invitation token. Open the whole link from the invitation, or ask for a new one.',
            )
          }
        />
      </Frame>
    );
  }
  if (error !== undefined) {
    return (
      <Frame>
        <ErrorNote title="Could not start the sign-in" error={error} />
      </Frame>
    );
  }
  if (user !== null && me.data !== undefined && me.data.user.email !== invitation.email.toLowerCase()) {
    return (
      <Frame>
        <Text>
          This invitation is for <Code>{invitation.email}</Code>, but you are signed in as{' '}
          <Code>{me.data.user.email ?? me.data.user.id}</Code>.
        </Text>
        <Group>
          <Button
            onClick={() => {
              signOut()
                .then(() => signIn({ invitation }))
                .catch(setError);
            }}
          >
            Sign out and sign in as {invitation.email}
          </Button>
          <Anchor href="#/">Stay signed in as {me.data.user.email ?? 'yourself'}</Anchor>
        </Group>
      </Frame>
    );
  }
  return (
    <Frame>
      <Group>
        <Loader size="sm" />
        <Text>Signing you in as {invitation.email}…</Text>
      </Group>
    </Frame>
  );
}

function AcceptInvitation(): ReactNode {
  const { user } = useSession();
  // The first `GET /api/v1/me` after a login makes the person known to svc-cloud (spec 5.1
  // rule 6); the invitation is accepted after it.
  const me = useMe();
  const queries = useQueryClient();
  const [token] = useState(() => sessionStorage.getItem(PENDING_KEY));
  const accept = useMutation({
    mutationFn: (invitationToken: string) =>
      unwrap(api.POST('/api/v1/invitations/accept', { body: { token: invitationToken } })),
    onSuccess: async (joined) => {
      sessionStorage.removeItem(PENDING_KEY);
      await queries.invalidateQueries({ queryKey: ['me'] });
      notifications.show({ color: 'green', message: `You joined the organisation as ${joined.role}.` });
      navigate(`/orgs/${joined.org.id}/fleet`, { replace: true });
    },
    onError: () => sessionStorage.removeItem(PENDING_KEY),
  });
  const started = useRef(false);
  useEffect(() => {
    if (token === null || user === null || !me.isSuccess || started.current) return;
    started.current = true;
    accept.mutate(token);
  }, [token, user, me.isSuccess, accept]);

  if (token === null && !accept.isSuccess) {
    return (
      <Frame>
        <Text>No invitation is waiting to be accepted in this tab.</Text>
        <Anchor href="#/">Go to the console</Anchor>
      </Frame>
    );
  }
  if (accept.isError || me.isError) {
    return (
      <Frame>
        <ErrorNote title="The invitation was not accepted" error={accept.error ?? me.error} />
        <Anchor href="#/">Go to the console</Anchor>
      </Frame>
    );
  }
  return (
    <Frame>
      <Group>
        <Loader size="sm" />
        <Text>Accepting the invitation…</Text>
      </Group>
    </Frame>
  );
}
