/** The sign-in page: shown on any page while signed out; signing in returns to that page. */
import { Alert, Button, Center, Paper, Stack, Text, Title } from '@mantine/core';
import { type ReactNode, useState } from 'react';
import { Link } from 'wouter';
import { useSession } from '../auth.js';
import { ErrorNote } from '../components/error-note.js';

/** Where the page was sent with a message (a refused login), for the first render. */
let pendingMessage: string | undefined;

/** Shows `message` on the next sign-in page (the provider refused, the login failed). */
export function showOnSignIn(message: string): void {
  pendingMessage = message;
}

/** The sign-in page. */
export function SignInPage(): ReactNode {
  const { config, signIn } = useSession();
  const [message] = useState(() => {
    const taken = pendingMessage;
    pendingMessage = undefined;
    return taken;
  });
  const [error, setError] = useState<unknown>();
  return (
    <Center mih="80vh">
      <Paper withBorder shadow="sm" p="xl" w={440} component="main">
        <Stack>
          <Title order={1} size="h3">
            svc console
          </Title>
          <Text>Sign in to see your robots, drive them, and manage who may.</Text>
          {message !== undefined && <ErrorNote title="Not signed in" error={new Error(message)} />}
          {error !== undefined && <ErrorNote title="Could not start the sign-in" error={error} />}
          <Button onClick={() => signIn().catch(setError)}>Sign in</Button>
          {config.developmentProvider && (
            <Alert color="yellow" title="Development sign-in">
              This svc-cloud runs its built-in development identity provider: the next page lets you pick a
              test user (Olivia is an owner, Alice an admin, Bob an operator, Vera a viewer) or type any name.
            </Alert>
          )}
          {(config.anonymous || config.openEnrolment) && (
            <Text size="sm">
              Development open enrolment: <Link href="/unclaimed">robots without an organisation</Link> are
              listed without signing in.
            </Text>
          )}
        </Stack>
      </Paper>
    </Center>
  );
}
