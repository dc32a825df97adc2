/**
 * In development open enrolment (`SVC_DEV_OPEN_ENROLMENT=1`), robots trusted on first connection
 * belong to no organisation, and anyone may list them without signing in (unauthenticated
 * `GET /api/v1/robots`, spec section 4). This page lists them and opens the plain pilot page.
 */
import { Anchor, Badge, Center, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client.js';
import { ErrorNote } from '../components/error-note.js';
import { Time } from '../components/time.js';

/** Robots without an organisation. */
export function UnclaimedPage(): ReactNode {
  const robots = useQuery({
    queryKey: ['unclaimed-robots'],
    queryFn: () => unwrap(api.GET('/api/v1/robots')),
    refetchInterval: 3_000,
  });
  const unclaimed = robots.data?.robots.filter((r) => r.orgId === null) ?? [];
  return (
    <Center mih="60vh">
      <Paper withBorder p="xl" w={760} component="main">
        <Stack>
          <Title order={1} size="h3">
            Robots without an organisation
          </Title>
          <Text size="sm">
            Development open enrolment admitted these robots on their first connection. They belong to no
            organisation, and anyone can list and open them while svc-cloud runs in this mode.{' '}
            <Anchor component={Link} href="/">
              Sign in
            </Anchor>{' '}
            for your organisations' robots.
          </Text>
          {robots.isError && <ErrorNote error={robots.error} />}
          {robots.isSuccess && unclaimed.length === 0 && (
            <Text c="dimmed">No robot without an organisation.</Text>
          )}
          {unclaimed.length > 0 && (
            <Table aria-label="Robots without an organisation">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Robot</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Last seen</Table.Th>
                  <Table.Th>Open</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {unclaimed.map((r) => (
                  <Table.Tr key={r.robotId}>
                    <Table.Td>{r.name ?? r.robotId}</Table.Td>
                    <Table.Td>
                      <Badge color={r.online ? 'green' : 'gray'}>{r.online ? 'online' : 'offline'}</Badge>
                    </Table.Td>
                    <Table.Td>{r.online ? 'now' : <Time at={r.lastSeenAt} />}</Table.Td>
                    <Table.Td>
                      <Anchor href={`../pilot/#robot=${encodeURIComponent(r.robotId)}`}>Open pilot</Anchor>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
        </Stack>
      </Paper>
    </Center>
  );
}
