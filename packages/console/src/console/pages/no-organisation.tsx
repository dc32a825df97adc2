/** Signed in, but no organisation has this person (invite-only without an invitation). */
import { Button, Center, Code, Paper, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';
import { useMe, useSession } from '../auth.js';

/** The "no organisation yet" page (spec section 7). */
export function NoOrganisationPage(): ReactNode {
  const { signOut } = useSession();
  const me = useMe();
  const email = me.data?.user.email;
  return (
    <Center mih="80vh">
      <Paper withBorder shadow="sm" p="xl" w={520} component="main">
        <Stack>
          <Title order={1} size="h3">
            No organisation yet
          </Title>
          <Text>
            You are signed in
            {email ? (
              <>
                {' '}
                as <Code>{email}</Code>
              </>
            ) : null}
            , but no organisation has given you access.
          </Text>
          <Text>
            Ask an administrator of your organisation for an invitation to this email address. The invitation
            link signs you in and adds you with the role it names.
          </Text>
          <Button variant="default" onClick={() => void signOut()}>
            Sign out
          </Button>
        </Stack>
      </Paper>
    </Center>
  );
}
