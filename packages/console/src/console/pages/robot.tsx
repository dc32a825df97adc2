/**
 * One robot: its presence and channels, who is on it now, who may observe or drive it (grants),
 * its recent sessions from the audit log, the last time signalling refused it and why, "Open
 * pilot", and deletion (the remedy of `key-mismatch`: delete, then enrol again with a new token).
 */
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Group,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client.js';
import type { paths } from '../api/schema.js';
import type { MyOrg } from '../auth.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorNote } from '../components/error-note.js';
import { Time } from '../components/time.js';
import { navigate } from '../hash-location.js';
import { can } from '../roles.js';

type RobotView =
  paths['/api/v1/robots/{robot}']['get']['responses'][200]['content']['application/json']['robot'];
type Grant =
  paths['/api/v1/robots/{robot}/grants']['get']['responses'][200]['content']['application/json']['grants'][number];

/** What a refusal means and what to do, by the reason signalling gave. */
const DENIAL_ADVICE: Readonly<Record<string, string>> = {
  'key-mismatch':
    'The robot presented a key other than the one it enrolled with (a reinstalled robot, or a copied id). If this is your robot, delete it here, create a new enrolment token and enrol it again.',
  'unknown-robot': 'The robot is not enrolled. Create an enrolment token and enrol it.',
  'robot-deleted': 'The robot was deleted. Enrol it again with a new token.',
};

/** The detail page of one robot of `org`. */
export function RobotPage(props: { readonly org: MyOrg; readonly robotId: string }): ReactNode {
  const { org, robotId } = props;
  const robot = useQuery({
    queryKey: ['robot', robotId],
    queryFn: () => unwrap(api.GET('/api/v1/robots/{robot}', { params: { path: { robot: robotId } } })),
    refetchInterval: 5_000,
  });
  if (robot.isPending) return <Text c="dimmed">Loading the robot…</Text>;
  if (robot.isError) return <ErrorNote error={robot.error} />;
  const view = robot.data.robot;
  const admin = can(org.role, 'robots.manage');
  return (
    <Stack maw={1000}>
      <Anchor component={Link} href={`/orgs/${org.id}/fleet`} size="sm">
        ← Fleet
      </Anchor>
      <RobotHeader org={org} robot={view} />
      <LastDenial robot={view} />
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Channels robot={view} />
        <SessionsNow robot={view} admin={admin} />
      </SimpleGrid>
      {admin && <Grants org={org} robotId={robotId} />}
      {can(org.role, 'audit.read') && <RecentSessions orgId={org.id} robotId={robotId} />}
    </Stack>
  );
}

function RobotHeader(props: { readonly org: MyOrg; readonly robot: RobotView }): ReactNode {
  const { org, robot } = props;
  const queries = useQueryClient();
  const remove = useMutation({
    mutationFn: () =>
      unwrap(api.DELETE('/api/v1/robots/{robot}', { params: { path: { robot: robot.robotId } } })),
    onSuccess: async () => {
      notifications.show({ color: 'green', message: `Robot ${robot.name ?? robot.robotId} deleted.` });
      await queries.invalidateQueries({ queryKey: ['fleet', org.id] });
      navigate(`/orgs/${org.id}/fleet`);
    },
  });
  // Operators and above drive their organisation's robots by their role; a grant gives the rest
  // (svc-cloud decides when it mints the session token).
  const drives = robot.access === 'drive' || (robot.orgId === org.id && can(org.role, 'session.start'));
  const mayOpen = drives || robot.access !== null;
  const scope = drives ? 'drive' : 'observe';
  return (
    <Stack gap="xs">
      <Group justify="space-between" align="flex-start">
        <div>
          <Title order={2}>{robot.name ?? robot.robotId}</Title>
          <Text size="sm" c="dimmed">
            {robot.robotId} · enrolled <Time at={robot.enrolledAt} never="—" />
          </Text>
        </div>
        <Group>
          <Badge
            size="lg"
            color={robot.online ? 'green' : 'gray'}
            variant={robot.online ? 'filled' : 'light'}
          >
            {robot.online ? 'online' : 'offline'}
          </Badge>
          {mayOpen && (
            <Button
              component={Link}
              href={`/orgs/${org.id}/robots/${encodeURIComponent(robot.robotId)}/pilot?scope=${scope}`}
            >
              {scope === 'drive' ? 'Open pilot' : 'Watch'}
            </Button>
          )}
          {can(org.role, 'robots.manage') && (
            <ConfirmButton
              label="Delete robot"
              size="sm"
              title={`Delete ${robot.name ?? robot.robotId}?`}
              message="Its sessions end now and it can no longer connect. To use it again, enrol it with a new enrolment token. The audit log keeps its history."
              confirmLabel="Delete"
              loading={remove.isPending}
              onConfirm={() => remove.mutate()}
            />
          )}
        </Group>
      </Group>
      {!robot.online && (
        <Text size="sm">
          Offline, last seen <Time at={robot.lastSeenAt} />.
        </Text>
      )}
      {remove.isError && <ErrorNote title="The robot was not deleted" error={remove.error} />}
    </Stack>
  );
}

function LastDenial(props: { readonly robot: RobotView }): ReactNode {
  const denial = props.robot.lastDenial;
  if (denial === null) return null;
  return (
    <Alert color="orange" title={`Signalling refused this robot: ${denial.reason}`} role="alert">
      <Text size="sm">
        Last refused <Time at={denial.at} />. {DENIAL_ADVICE[denial.reason] ?? ''}
      </Text>
    </Alert>
  );
}

function Channels(props: { readonly robot: RobotView }): ReactNode {
  return (
    <Paper withBorder p="md">
      <Title order={3} size="h4" mb="xs">
        Channels
      </Title>
      {props.robot.channels.length === 0 ? (
        <Text c="dimmed" size="sm">
          {props.robot.online ? 'The robot announced no channel.' : 'Known when the robot is online.'}
        </Text>
      ) : (
        <Table>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Kind</Table.Th>
              <Table.Th>Codec</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {props.robot.channels.map((c) => (
              <Table.Tr key={c.id}>
                <Table.Td>{c.name}</Table.Td>
                <Table.Td>{c.kind}</Table.Td>
                <Table.Td>{c.codec}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Paper>
  );
}

function SessionsNow(props: { readonly robot: RobotView; readonly admin: boolean }): ReactNode {
  const { robot } = props;
  const queries = useQueryClient();
  const end = useMutation({
    mutationFn: (session: string) =>
      unwrap(
        api.DELETE('/api/v1/robots/{robot}/sessions/{session}', {
          params: { path: { robot: robot.robotId, session } },
        }),
      ),
    onSettled: () => queries.invalidateQueries({ queryKey: ['robot', robot.robotId] }),
  });
  return (
    <Paper withBorder p="md">
      <Title order={3} size="h4" mb="xs">
        Sessions now
      </Title>
      {end.isError && <ErrorNote title="The session was not ended" error={end.error} />}
      {robot.sessions.length === 0 ? (
        <Text c="dimmed" size="sm">
          Nobody is connected.
        </Text>
      ) : (
        <Table>
          <Table.Tbody>
            {robot.sessions.map((s) => (
              <Table.Tr key={s.sessionId}>
                <Table.Td>
                  <Badge variant="light" color={s.role === 'driver' ? 'blue' : 'gray'}>
                    {s.role}
                  </Badge>
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{sessionHolder(robot, s.sessionId)}</Text>
                </Table.Td>
                <Table.Td>
                  <SessionPathBadge path={s.path} backend={s.backend} />
                </Table.Td>
                {props.admin && (
                  <Table.Td>
                    <ConfirmButton
                      label="End"
                      ariaLabel={`End session ${s.sessionId}`}
                      title="End this session now?"
                      message="The pilot is disconnected and the robot refuses this session's token until it expires."
                      onConfirm={() => end.mutate(s.sessionId)}
                    />
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Paper>
  );
}

/** Who holds a session, as far as the caller may know: the driver's name or email, else the session id. */
type RobotSession = RobotView['sessions'][number];

/** How a session travels: direct or relayed, and on WebRTC when it is (a relay there is TURN). */
function SessionPathBadge(props: {
  readonly path: RobotSession['path'];
  readonly backend: RobotSession['backend'];
}): ReactNode {
  const relay = props.path === 'relay';
  const webrtc = props.backend === 'webrtc';
  const label = `${relay ? 'relay' : 'direct'}${webrtc ? (relay ? ' (TURN)' : ' (WebRTC)') : ''}`;
  const title = relay
    ? webrtc
      ? 'On WebRTC through a TURN server: the pilot and the robot could not reach each other directly. Still encrypted end to end.'
      : "Through svc-cloud's relay: the pilot could not reach the robot directly. Still encrypted end to end."
    : webrtc
      ? 'Straight between the pilot and the robot, on WebRTC data channels'
      : 'Straight between the pilot and the robot';
  return (
    <Badge variant="light" color={relay ? 'orange' : 'teal'} title={title}>
      {label}
    </Badge>
  );
}

function sessionHolder(robot: RobotView, sessionId: string): string {
  const driver = robot.driver;
  if (driver !== null && driver.sessionId === sessionId) return driver.name ?? driver.email ?? sessionId;
  return sessionId;
}

function Grants(props: { readonly org: MyOrg; readonly robotId: string }): ReactNode {
  const { org, robotId } = props;
  const queries = useQueryClient();
  const grants = useQuery({
    queryKey: ['grants', robotId],
    queryFn: () => unwrap(api.GET('/api/v1/robots/{robot}/grants', { params: { path: { robot: robotId } } })),
  });
  const remove = useMutation({
    mutationFn: (id: string) =>
      unwrap(api.DELETE('/api/v1/robots/{robot}/grants/{id}', { params: { path: { robot: robotId, id } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['grants', robotId] }),
  });
  return (
    <Paper withBorder p="md">
      <Title order={3} size="h4" mb="xs">
        Grants
      </Title>
      <Text size="sm" mb="sm">
        Members of {org.name} reach this robot through their role. A grant lets someone else observe or drive
        it: a user, another organisation, or everyone (public, observe only).
      </Text>
      {remove.isError && <ErrorNote title="The grant was not removed" error={remove.error} />}
      {grants.isPending && <Text c="dimmed">Loading grants…</Text>}
      {grants.isError && <ErrorNote error={grants.error} />}
      {grants.data !== undefined && grants.data.grants.length > 0 && (
        <Table mb="md">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Who</Table.Th>
              <Table.Th>Access</Table.Th>
              <Table.Th>Since</Table.Th>
              <Table.Th>Action</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {grants.data.grants.map((g) => (
              <Table.Tr key={g.id}>
                <Table.Td>{granteeLabel(g, org)}</Table.Td>
                <Table.Td>{g.access}</Table.Td>
                <Table.Td>
                  <Time at={g.createdAt} />
                </Table.Td>
                <Table.Td>
                  <ConfirmButton
                    label="Remove"
                    ariaLabel={`Remove grant to ${granteeLabel(g, org)}`}
                    title="Remove this grant?"
                    message="Sessions already open keep running until they end; new ones are refused."
                    onConfirm={() => remove.mutate(g.id)}
                  />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <AddGrant robotId={robotId} />
    </Paper>
  );
}

function granteeLabel(grant: Grant, org: MyOrg): string {
  switch (grant.grantee.kind) {
    case 'user':
      return `user ${grant.grantee.userId}`;
    case 'org':
      return grant.grantee.orgId === org.id
        ? `everyone in ${org.name}`
        : `organisation ${grant.grantee.orgId}`;
    case 'public':
      return 'everyone (public)';
    default: {
      const never: never = grant.grantee;
      return String(never);
    }
  }
}

function AddGrant(props: { readonly robotId: string }): ReactNode {
  const queries = useQueryClient();
  const [kind, setKind] = useState<'user' | 'org' | 'public'>('user');
  const [id, setId] = useState('');
  const [access, setAccess] = useState<'observe' | 'drive'>('observe');
  const add = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/robots/{robot}/grants', {
          params: { path: { robot: props.robotId } },
          body: {
            grantee:
              kind === 'user'
                ? { kind, userId: id.trim() }
                : kind === 'org'
                  ? { kind, orgId: id.trim() }
                  : { kind: 'public' },
            access,
          },
        }),
      ),
    onSuccess: () => {
      setId('');
      notifications.show({ color: 'green', message: 'Grant added.' });
      return queries.invalidateQueries({ queryKey: ['grants', props.robotId] });
    },
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        add.mutate();
      }}
    >
      <Group align="flex-end">
        <Select
          label="Grant to"
          data={[
            { value: 'user', label: 'A user' },
            { value: 'org', label: 'An organisation' },
            { value: 'public', label: 'Everyone (public)' },
          ]}
          value={kind}
          allowDeselect={false}
          onChange={(value) => setKind((value ?? 'user') as typeof kind)}
          w={200}
        />
        {kind !== 'public' && (
          <TextInput
            label={kind === 'user' ? 'User id' : 'Organisation id'}
            description={kind === 'user' ? 'They must have signed in once' : undefined}
            value={id}
            onChange={(event) => setId(event.currentTarget.value)}
            w={320}
            required
          />
        )}
        <Select
          label="Access"
          data={[
            { value: 'observe', label: 'Observe' },
            { value: 'drive', label: 'Drive' },
          ]}
          value={access}
          allowDeselect={false}
          onChange={(value) => setAccess((value ?? 'observe') as typeof access)}
          w={140}
        />
        <Button type="submit" loading={add.isPending}>
          Add grant
        </Button>
      </Group>
      {add.isError && <ErrorNote title="The grant was not added" error={add.error} />}
    </form>
  );
}

/** Audit actions that tell a robot's sessions. */
const SESSION_ACTIONS = new Set([
  'session-token.mint',
  'session.revoke',
  'session.path',
  'driver-slot.acquire',
  'driver-slot.release',
  'driver-slot.handover',
  'driver-slot.takeover',
]);

function RecentSessions(props: { readonly orgId: string; readonly robotId: string }): ReactNode {
  const log = useQuery({
    queryKey: ['audit', props.orgId, { target: props.robotId }],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/audit', {
          params: { path: { org: props.orgId }, query: { target: props.robotId, limit: 100 } },
        }),
      ),
  });
  const entries = log.data?.entries.filter((e) => SESSION_ACTIONS.has(e.action)).slice(0, 20) ?? [];
  return (
    <Paper withBorder p="md">
      <Title order={3} size="h4" mb="xs">
        Recent sessions
      </Title>
      {log.isError && <ErrorNote error={log.error} />}
      {log.isSuccess && entries.length === 0 && (
        <Text c="dimmed" size="sm">
          No session yet.
        </Text>
      )}
      {entries.length > 0 && (
        <Table>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>When</Table.Th>
              <Table.Th>What</Table.Th>
              <Table.Th>Who</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {entries.map((e) => (
              <Table.Tr key={e.id}>
                <Table.Td>
                  <Time at={e.at} />
                </Table.Td>
                <Table.Td>{e.action}</Table.Td>
                <Table.Td>{e.actor.id ?? e.actor.kind}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Paper>
  );
}
