/**
 * "Audit log": who did what in the organisation, newest first, filtered by actor, action, target
 * and time, one page at a time through the API's `before`/`next` cursor ("Load older entries").
 */
import {
  Anchor,
  Autocomplete,
  Badge,
  Button,
  Code,
  Group,
  Paper,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client.js';
import type { paths } from '../api/schema.js';
import type { MyOrg } from '../auth.js';
import { ErrorNote } from '../components/error-note.js';
import { relativeTime } from '../components/time.js';

type AuditGet = paths['/api/v1/orgs/{org}/audit']['get'];
type AuditQuery = NonNullable<AuditGet['parameters']['query']>;
type Entry = AuditGet['responses'][200]['content']['application/json']['entries'][number];

/** Entries per page. */
const PAGE_SIZE = 50;

/**
 * Actions svc-cloud writes, offered as suggestions (the API does not list them; any text still
 * filters, since the log may hold actions newer than this console).
 */
const KNOWN_ACTIONS = [
  'api-key.create',
  'api-key.revoke',
  'driver-slot.acquire',
  'driver-slot.handover',
  'driver-slot.refuse',
  'driver-slot.release',
  'driver-slot.takeover',
  'driver-slot.timeout',
  'enrolment-token.create',
  'enrolment-token.revoke',
  'grant.create',
  'grant.delete',
  'invitation.accept',
  'invitation.create',
  'invitation.revoke',
  'membership.delete',
  'membership.leave',
  'membership.update',
  'org.create',
  'org.update',
  'provisioning.default-org',
  'provisioning.denied',
  'provisioning.invite-only',
  'provisioning.self-serve',
  'robot.admit',
  'robot.delete',
  'robot.enrol',
  'session-token.mint',
  'session.revoke',
  'user.create',
  'user.email-conflict',
  'user.provider-change',
];

/** The filters as typed; times are `datetime-local` values (local time, no zone). */
interface Filters {
  readonly actor: string;
  readonly action: string;
  readonly target: string;
  readonly since: string;
  readonly until: string;
}

const NO_FILTERS: Filters = { actor: '', action: '', target: '', since: '', until: '' };

/** The audit log page of `org`. */
export function AuditPage(props: { readonly org: MyOrg }): ReactNode {
  const { org } = props;
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  return (
    <Stack maw={1200}>
      <Title order={2}>Audit log</Title>
      <Text>
        What members, API keys, robots and svc-cloud itself did in {org.name}, newest first. Details never
        hold a secret.
      </Text>
      <FilterForm applied={filters} onApply={setFilters} />
      <EntryList org={org} filters={filters} />
    </Stack>
  );
}

function FilterForm(props: { readonly applied: Filters; readonly onApply: (filters: Filters) => void }) {
  const [draft, setDraft] = useState<Filters>(props.applied);
  const set = (key: keyof Filters) => (value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const [timeError, setTimeError] = useState<string>();
  return (
    <Paper withBorder p="md">
      <form
        aria-label="Audit log filters"
        onSubmit={(event) => {
          event.preventDefault();
          if (draft.since !== '' && draft.until !== '' && draft.since >= draft.until) {
            setTimeError('"Until" must be after "From"');
            return;
          }
          setTimeError(undefined);
          props.onApply({
            actor: draft.actor.trim(),
            action: draft.action.trim(),
            target: draft.target.trim(),
            since: draft.since,
            until: draft.until,
          });
        }}
      >
        <Group align="flex-end">
          <TextInput
            label="Actor id"
            description="A user, API key or robot id"
            value={draft.actor}
            onChange={(event) => set('actor')(event.currentTarget.value)}
            maxLength={100}
            w={220}
          />
          <Autocomplete
            label="Action"
            description="Pick one or type it"
            data={KNOWN_ACTIONS}
            value={draft.action}
            onChange={set('action')}
            maxLength={100}
            limit={40}
            w={220}
          />
          <TextInput
            label="Robot or target id"
            description="What the action was done to"
            value={draft.target}
            onChange={(event) => set('target')(event.currentTarget.value)}
            maxLength={200}
            w={220}
          />
          <TextInput
            label="From"
            description="Entries at or after"
            type="datetime-local"
            value={draft.since}
            onChange={(event) => set('since')(event.currentTarget.value)}
            error={timeError}
          />
          <TextInput
            label="Until"
            description="Entries before"
            type="datetime-local"
            value={draft.until}
            onChange={(event) => set('until')(event.currentTarget.value)}
          />
        </Group>
        <Group mt="md">
          <Button type="submit">Apply filters</Button>
          <Button
            variant="default"
            onClick={() => {
              setDraft(NO_FILTERS);
              setTimeError(undefined);
              props.onApply(NO_FILTERS);
            }}
          >
            Clear filters
          </Button>
        </Group>
      </form>
    </Paper>
  );
}

/** The API's query for `filters`: empty filters left out, local times as ISO 8601 instants. */
function auditQuery(filters: Filters, before: number | undefined): AuditQuery {
  return {
    limit: PAGE_SIZE,
    ...(filters.actor !== '' && { actor: filters.actor }),
    ...(filters.action !== '' && { action: filters.action }),
    ...(filters.target !== '' && { target: filters.target }),
    ...(filters.since !== '' && { since: new Date(filters.since).toISOString() }),
    ...(filters.until !== '' && { until: new Date(filters.until).toISOString() }),
    ...(before !== undefined && { before }),
  };
}

function EntryList(props: { readonly org: MyOrg; readonly filters: Filters }) {
  const { org, filters } = props;
  const log = useInfiniteQuery({
    queryKey: ['audit', org.id, filters],
    initialPageParam: undefined as number | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/audit', {
          params: { path: { org: org.id }, query: auditQuery(filters, pageParam) },
        }),
      ),
    getNextPageParam: (last) => (last.next === null ? undefined : Number(last.next)),
  });
  const names = useMemberNames(org.id);
  if (log.isPending) return <Text c="dimmed">Loading the audit log…</Text>;
  if (log.isLoadingError) return <ErrorNote error={log.error} />;
  const entries = log.data.pages.flatMap((page) => page.entries);
  const filtered = Object.values(filters).some((value) => value !== '');
  return (
    <Stack>
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          {entries.length} {entries.length === 1 ? 'entry' : 'entries'}
          {log.hasNextPage ? ' so far' : ''}
        </Text>
        <Button
          variant="default"
          size="xs"
          loading={log.isRefetching && !log.isFetchingNextPage}
          onClick={() => void log.refetch()}
        >
          Refresh
        </Button>
      </Group>
      {entries.length === 0 ? (
        <Text c="dimmed">{filtered ? 'No entry matches these filters.' : 'The log is empty.'}</Text>
      ) : (
        <Table striped verticalSpacing={4} aria-label="Audit log entries">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Time</Table.Th>
              <Table.Th>Actor</Table.Th>
              <Table.Th>Action</Table.Th>
              <Table.Th>Target</Table.Th>
              <Table.Th>Detail</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {entries.map((entry) => (
              <EntryRow key={entry.id} orgId={org.id} entry={entry} names={names} />
            ))}
          </Table.Tbody>
        </Table>
      )}
      {log.isRefetchError && (
        <ErrorNote
          title={
            log.isFetchNextPageError ? 'Older entries could not be loaded' : 'The log could not be refreshed'
          }
          error={log.error}
        />
      )}
      {log.hasNextPage && (
        <Group>
          <Button variant="light" loading={log.isFetchingNextPage} onClick={() => void log.fetchNextPage()}>
            Load older entries
          </Button>
        </Group>
      )}
    </Stack>
  );
}

/** Members' emails (or names) by user id, to name users in the log; empty until loaded or if refused. */
function useMemberNames(orgId: string): ReadonlyMap<string, string> {
  const members = useQuery({
    queryKey: ['members', orgId],
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}/members', { params: { path: { org: orgId } } })),
  });
  const names = new Map<string, string>();
  for (const m of members.data?.members ?? []) {
    const name = m.email ?? m.name;
    if (name !== null) names.set(m.userId, name);
  }
  return names;
}

function EntryRow(props: {
  readonly orgId: string;
  readonly entry: Entry;
  readonly names: ReadonlyMap<string, string>;
}) {
  const { entry, names } = props;
  const at = new Date(entry.at);
  return (
    <Table.Tr>
      <Table.Td>
        <Text size="sm" style={{ whiteSpace: 'nowrap' }}>
          <time dateTime={entry.at}>{at.toLocaleString()}</time>
        </Text>
        <Text size="xs" c="dimmed">
          {relativeTime(at)}
        </Text>
      </Table.Td>
      <Table.Td>
        <Party
          orgId={props.orgId}
          kind={entry.actor.kind}
          id={entry.actor.id}
          name={nameOf(names, entry.actor.kind, entry.actor.id)}
        />
      </Table.Td>
      <Table.Td>
        <Code>{entry.action}</Code>
      </Table.Td>
      <Table.Td>
        {entry.target.kind === null && entry.target.id === null ? (
          <Text size="sm" c="dimmed">
            none
          </Text>
        ) : (
          <Party
            orgId={props.orgId}
            kind={entry.target.kind}
            id={entry.target.id}
            name={nameOf(names, entry.target.kind, entry.target.id)}
          />
        )}
      </Table.Td>
      <Table.Td>
        <Detail detail={entry.detail} />
      </Table.Td>
    </Table.Tr>
  );
}

function nameOf(
  names: ReadonlyMap<string, string>,
  kind: string | null,
  id: string | null,
): string | undefined {
  return kind === 'user' && id !== null ? names.get(id) : undefined;
}

/**
 * An actor or a target: its kind, then its name when known, and its id (to copy into a filter); a
 * robot's id links to its page.
 */
function Party(props: {
  readonly orgId: string;
  readonly kind: string | null;
  readonly id: string | null;
  readonly name: string | undefined;
}) {
  const { orgId, kind, id, name } = props;
  return (
    <Stack gap={0}>
      <Group gap={4} wrap="nowrap">
        {kind !== null && (
          <Badge variant="light" color="gray" size="xs" tt="none">
            {kind.replace('_', ' ')}
          </Badge>
        )}
        {name !== undefined && <Text size="sm">{name}</Text>}
      </Group>
      {id !== null && (
        <Text size="xs" c="dimmed" ff="monospace" style={{ wordBreak: 'break-all' }}>
          {kind === 'robot' ? (
            <Anchor component={Link} href={`/orgs/${orgId}/robots/${id}`} inherit>
              {id}
            </Anchor>
          ) : (
            id
          )}
        </Text>
      )}
    </Stack>
  );
}

/** The detail as `key: value` pairs on a line or two; the whole of it on hover. */
function Detail(props: { readonly detail: Entry['detail'] }) {
  const pairs = Object.entries(props.detail);
  if (pairs.length === 0) return null;
  const text = pairs.map(
    ([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`,
  );
  return (
    <Text size="xs" ff="monospace" lineClamp={2} title={text.join('\n')} style={{ wordBreak: 'break-all' }}>
      {text.join(' · ')}
    </Text>
  );
}
