/** An error as the person should read it: the API's own message, which says what to do. */
import { Alert } from '@mantine/core';
import type { ReactNode } from 'react';

/** Shows `error`'s message in an alert (role `alert`). */
export function ErrorNote(props: { readonly error: unknown; readonly title?: string }): ReactNode {
  const message = props.error instanceof Error ? props.error.message : String(props.error);
  return (
    <Alert color="red" title={props.title ?? 'Something went wrong'} role="alert" my="sm">
      {message}
    </Alert>
  );
}
