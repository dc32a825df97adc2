/** A secret shown once (an enrolment token, an API key, an invitation link), with a copy button. */
import { ActionIcon, Alert, Code, CopyButton, Group, Stack, Text, Tooltip } from '@mantine/core';
import type { ReactNode } from 'react';

/** One value to copy, with its label. */
export function CopyLine(props: { readonly label: string; readonly value: string }): ReactNode {
  return (
    <Stack gap={4}>
      <Text size="sm" fw={500}>
        {props.label}
      </Text>
      <Group gap="xs" wrap="nowrap" align="flex-start">
        <Code
          block
          style={{ flex: 1, whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}
          aria-label={props.label}
        >
          {props.value}
        </Code>
        <CopyButton value={props.value}>
          {({ copied, copy }) => (
            <Tooltip label={copied ? 'Copied' : 'Copy'}>
              <ActionIcon variant="light" onClick={copy} aria-label={`Copy ${props.label.toLowerCase()}`}>
                {copied ? '✓' : '⧉'}
              </ActionIcon>
            </Tooltip>
          )}
        </CopyButton>
      </Group>
    </Stack>
  );
}

/** The "shown once" frame around one or more {@link CopyLine}s. */
export function ShownOnce(props: { readonly title: string; readonly children: ReactNode }): ReactNode {
  return (
    <Alert color="green" title={props.title} role="status">
      <Stack gap="sm">
        <Text size="sm">This is the only time it is shown: copy it now. svc-cloud keeps only its hash.</Text>
        {props.children}
      </Stack>
    </Alert>
  );
}
