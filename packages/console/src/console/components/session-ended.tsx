/**
 * When the API says the session ended (a 401, or renewal failed), the page stays where it is and
 * this dialog offers to sign in again; the login returns to the same page.
 */
import { Button, Group, Modal, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { useSession } from '../auth.js';

/** The "session ended" dialog; open while {@link Session.ended}. */
export function SessionEndedDialog(): ReactNode {
  const { ended, user, signIn, signOut } = useSession();
  return (
    <Modal
      opened={ended && user !== null}
      onClose={() => {}}
      withCloseButton={false}
      closeOnClickOutside={false}
      closeOnEscape={false}
      title="Your session ended"
      centered
    >
      <Text mb="md">Sign in again to carry on. You will come back to this page.</Text>
      <Group justify="flex-end">
        <Button variant="default" onClick={() => void signOut()}>
          Sign out
        </Button>
        <Button onClick={() => void signIn({ returnTo: location.hash || '#/' })}>Sign in again</Button>
      </Group>
    </Modal>
  );
}
