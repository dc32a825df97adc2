/**
 * Fleet: every robot of the organisation with its live presence (online, last seen, sessions and
 * driver, the path), pushed by svc-cloud as it changes (`fleet.ts`), searchable and filterable,
 * in a virtualised list that stays quick with thousands of robots.
 */
import { Badge, Button, Group, SegmentedControl, Stack, Text, TextInput, Title } from '@mantine/core';
import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, type ReactNode, useDeferredValue, useMemo, useRef, useState } from 'react';
import { Link } from 'wouter';
import type { MyOrg } from '../auth.js';
import { ErrorNote } from '../components/error-note.js';
import { Time } from '../components/time.js';
import { type FleetRobot, useFleet } from '../fleet.js';
import { pathLabel } from '../path-label.js';
import { can } from '../roles.js';

type Shown = 'all' | 'online' | 'offline';

/** Height of one row, px (the list is virtualised: only the rows in view are in the page). */
const ROW_HEIGHT = 52;

/** Column widths, shared by the header and the rows. */
const COLUMNS = 'minmax(14rem, 2fr) 7rem 9rem minmax(10rem, 1.5fr) 8rem minmax(8rem, 1fr)';

/** The Fleet page of `org`. */
export function FleetPage(props: { readonly org: MyOrg }): ReactNode {
  const { org } = props;
  const fleet = useFleet(org.id);
  const [search, setSearch] = useState('');
  const [shown, setShown] = useState<Shown>('all');
  const deferredSearch = useDeferredValue(search);
  const robots = useMemo(
    () => filterRobots(fleet.robots, deferredSearch, shown),
    [fleet.robots, deferredSearch, shown],
  );
  const online = useMemo(() => fleet.robots.filter((r) => r.online).length, [fleet.robots]);

  return (
    <Stack h="calc(100vh - 90px)" gap="sm">
      <Group justify="space-between">
        <Title order={2}>Fleet</Title>
        {can(org.role, 'robots.manage') && (
          <Button component={Link} href={`/orgs/${org.id}/enrolment`}>
            Create enrolment token
          </Button>
        )}
      </Group>
      <Group>
        <TextInput
          aria-label="Search robots"
          placeholder="Search by name or id"
          value={search}
          onChange={(event) => setSearch(event.currentTarget.value)}
          w={280}
        />
        <SegmentedControl
          aria-label="Show"
          value={shown}
          onChange={(value) => setShown(value as Shown)}
          data={[
            { value: 'all', label: 'All' },
            { value: 'online', label: 'Online' },
            { value: 'offline', label: 'Offline' },
          ]}
        />
        <Text c="dimmed" size="sm" role="status" aria-live="polite">
          {fleet.state === 'loading'
            ? 'Loading robots…'
            : `${fleet.robots.length} robots, ${online} online${robots.length !== fleet.robots.length ? `, ${robots.length} shown` : ''}`}
          {fleet.state === 'reconnecting' && ' · live updates interrupted, reconnecting…'}
        </Text>
      </Group>
      {fleet.error !== undefined && <ErrorNote title="Live updates stopped" error={fleet.error} />}
      {fleet.state !== 'loading' && fleet.robots.length === 0 ? (
        <EmptyFleet org={org} />
      ) : (
        <RobotTable orgId={org.id} robots={robots} />
      )}
    </Stack>
  );
}

/** Robots whose name or id contains `search` (any case), online or offline as `shown` asks. */
export function filterRobots(robots: readonly FleetRobot[], search: string, shown: Shown): FleetRobot[] {
  const needle = search.trim().toLowerCase();
  return robots.filter(
    (r) =>
      (shown === 'all' || (shown === 'online') === r.online) &&
      (needle === '' ||
        r.robotId.toLowerCase().includes(needle) ||
        (r.name ?? '').toLowerCase().includes(needle)),
  );
}

function EmptyFleet(props: { readonly org: MyOrg }): ReactNode {
  return (
    <Stack align="flex-start">
      <Text>{props.org.name} has no robot yet.</Text>
      {can(props.org.role, 'robots.manage') ? (
        <Text>
          Create an enrolment token and run the command it shows on the robot; the robot appears here as soon
          as it connects.
        </Text>
      ) : (
        <Text>An admin of {props.org.name} enrols robots; they appear here as soon as they connect.</Text>
      )}
    </Stack>
  );
}

/** Height of the table's header row, px. */
const HEADER_HEIGHT = 34;

function RobotTable(props: { readonly orgId: string; readonly robots: readonly FleetRobot[] }): ReactNode {
  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({
    count: props.robots.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
    scrollMargin: HEADER_HEIGHT,
  });
  const grid = { display: 'grid', gridTemplateColumns: COLUMNS, gap: 12, alignItems: 'center' } as const;
  return (
    <div ref={scroller} style={{ flex: 1, minHeight: 0, overflow: 'auto' }}>
      <table
        aria-label="Robots"
        aria-rowcount={props.robots.length + 1}
        style={{ display: 'block', width: '100%' }}
      >
        <thead
          style={{
            display: 'block',
            position: 'sticky',
            top: 0,
            zIndex: 1,
            background: 'var(--mantine-color-body)',
          }}
        >
          <tr style={{ ...grid, height: HEADER_HEIGHT }}>
            {['Robot', 'Status', 'Last seen', 'Sessions', 'Path', 'Channels'].map((name) => (
              <th key={name} style={{ textAlign: 'left', fontSize: 'var(--mantine-font-size-sm)' }}>
                {name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody style={{ display: 'block', position: 'relative', height: virtual.getTotalSize() }}>
          {virtual.getVirtualItems().map((item) => {
            const robot = props.robots[item.index]!;
            return (
              <RobotRow
                key={robot.robotId}
                orgId={props.orgId}
                robot={robot}
                index={item.index}
                top={item.start - HEADER_HEIGHT}
              />
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/**
 * One robot's row. Memoised: an update of one robot gives only that robot a new object, so with
 * ten consoles open and a fleet coming online only the changed rows are drawn again.
 */
const RobotRow = memo(function RobotRow(props: {
  readonly orgId: string;
  readonly robot: FleetRobot;
  readonly index: number;
  readonly top: number;
}): ReactNode {
  const { robot } = props;
  const driving = robot.sessions.some((s) => s.role === 'driver');
  const observers = robot.sessions.length - (driving ? 1 : 0);
  return (
    <tr
      aria-rowindex={props.index + 2}
      data-robot={robot.robotId}
      style={{
        position: 'absolute',
        top: 0,
        left: 0,
        right: 0,
        height: ROW_HEIGHT,
        transform: `translateY(${props.top}px)`,
        display: 'grid',
        gridTemplateColumns: COLUMNS,
        gap: 12,
        alignItems: 'center',
        borderBottom: '1px solid var(--mantine-color-default-border)',
      }}
    >
      <td style={{ minWidth: 0 }}>
        <Link href={`/orgs/${props.orgId}/robots/${encodeURIComponent(robot.robotId)}`}>
          {robot.name ?? robot.robotId}
        </Link>
        {robot.name !== null && (
          <Text size="xs" c="dimmed" truncate>
            {robot.robotId}
          </Text>
        )}
      </td>
      <td>
        <Badge color={robot.online ? 'green' : 'gray'} variant={robot.online ? 'filled' : 'light'}>
          {robot.online ? 'online' : 'offline'}
        </Badge>
      </td>
      <td>
        <Text size="sm">{robot.online ? 'now' : <Time at={robot.lastSeenAt} />}</Text>
      </td>
      <td style={{ minWidth: 0 }}>
        <Text size="sm" truncate>
          {robot.sessions.length === 0
            ? '—'
            : `${driving ? `driven by ${driverName(robot)}` : 'no driver'}${observers > 0 ? `, ${observers} watching` : ''}`}
        </Text>
      </td>
      <td>
        <Text size="sm">{pathLabel(robot)}</Text>
      </td>
      <td style={{ minWidth: 0 }}>
        <Text size="sm" truncate>
          {robot.channels.map((c) => c.name).join(', ') || '—'}
        </Text>
      </td>
    </tr>
  );
});

/** Who drives `robot`, as far as the caller may know. */
export function driverName(robot: FleetRobot): string {
  return robot.driver?.name ?? robot.driver?.email ?? 'someone';
}
