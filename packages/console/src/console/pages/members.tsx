/**
 * "Members": everyone in the organisation with their role and since when. Admins change and remove
 * operators and viewers, owners everyone (`mayManageRole`); every member may leave. The API keeps
 * one owner, so the only owner is offered neither a role change nor removal.
 */
import { Badge, Select, Stack, Table, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { api, unwrap } from '../api/client.js';
import type { paths } from '../api/schema.js';
import { type MyOrg, type Role, useMe } from '../auth.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorNote } from '../components/error-note.js';
import { Time } from '../components/time.js';
import { navigate } from '../hash-location.js';
import { assignableRoles, mayManageRole, ROLES } from '../roles.js';

type Member =
  paths['/api/v1/orgs/{org}/members']['get']['responses'][200]['content']['application/json']['members'][number];

const ROLE_COLOURS: Record<Role, string> = {
  owner: 'grape',
  admin: 'blue',
  operator: 'teal',
  viewer: 'gray',
};

/** The members page of `org`. */
export function MembersPage(props: { readonly org: MyOrg }): ReactNode {
  const { org } = props;
  return (
    <Stack maw={1000}>
      <Title order={2}>Members</Title>
      <Text>
        Everyone in {org.name}. Admins manage operators and viewers; owners manage everyone. Invite new
        members from Invitations.
      </Text>
      <MemberList org={org} />
    </Stack>
  );
}

/** How a member is named on the page: their email, else their name (with the start of their id). */
function whoIs(member: Member): string {
  if (member.email !== null) return member.email;
  if (member.name !== null) return `${member.name} (${member.userId.slice(0, 8)})`;
  return member.userId;
}

function MemberList(props: { readonly org: MyOrg }) {
  const { org } = props;
  const me = useMe();
  const queries = useQueryClient();
  const members = useQuery({
    queryKey: ['members', org.id],
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}/members', { params: { path: { org: org.id } } })),
  });
  const myId = me.data?.user.id;

  const changeRole = useMutation({
    mutationFn: (change: { readonly member: Member; readonly role: Role }) =>
      unwrap(
        api.PATCH('/api/v1/orgs/{org}/members/{user}', {
          params: { path: { org: org.id, user: change.member.userId } },
          body: { role: change.role },
        }),
      ),
    onSuccess: (_answer, change) => {
      notifications.show({ color: 'green', message: `${whoIs(change.member)} is now ${change.role}.` });
    },
    onSettled: async (_answer, _error, change) => {
      await queries.invalidateQueries({ queryKey: ['members', org.id] });
      // Changing one's own role changes what the console shows.
      if (change.member.userId === myId) await queries.invalidateQueries({ queryKey: ['me'] });
    },
  });

  const remove = useMutation({
    mutationFn: (member: Member) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/members/{user}', {
          params: { path: { org: org.id, user: member.userId } },
        }),
      ),
    onSuccess: async (_answer, member) => {
      if (member.userId === myId) {
        notifications.show({ color: 'green', message: `You left ${org.name}.` });
        await queries.invalidateQueries({ queryKey: ['me'] });
        navigate('/');
        return;
      }
      notifications.show({ color: 'green', message: `${whoIs(member)} was removed from ${org.name}.` });
    },
    onSettled: () => queries.invalidateQueries({ queryKey: ['members', org.id] }),
  });

  if (members.isPending) return <Text c="dimmed">Loading members…</Text>;
  if (members.isError) return <ErrorNote error={members.error} />;
  const list = members.data.members;
  const owners = list.filter((m) => m.role === 'owner').length;

  return (
    <Stack>
      {changeRole.isError && <ErrorNote title="The role was not changed" error={changeRole.error} />}
      {remove.isError && <ErrorNote title="The member was not removed" error={remove.error} />}
      <Table striped aria-label="Members">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Member</Table.Th>
            <Table.Th>Role</Table.Th>
            <Table.Th>Joined</Table.Th>
            <Table.Th>Action</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.map((member) => {
            const self = member.userId === myId;
            const onlyOwner = member.role === 'owner' && owners <= 1;
            const manageable = !onlyOwner && mayManageRole(org.role, member.role);
            const pendingRole =
              changeRole.isPending && changeRole.variables.member.userId === member.userId
                ? changeRole.variables.role
                : undefined;
            return (
              <Table.Tr key={member.userId}>
                <Table.Td>
                  <MemberName member={member} self={self} />
                </Table.Td>
                <Table.Td>
                  {manageable ? (
                    <RoleSelect
                      member={member}
                      choices={assignableRoles(org.role)}
                      value={pendingRole ?? member.role}
                      disabled={pendingRole !== undefined}
                      onChange={(role) => changeRole.mutate({ member, role })}
                    />
                  ) : (
                    <Badge color={ROLE_COLOURS[member.role]} variant="light">
                      {member.role}
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td>
                  <Time at={member.since} />
                </Table.Td>
                <Table.Td>
                  {onlyOwner ? (
                    <Text size="xs" c="dimmed">
                      The only owner: make someone else owner first to change or remove.
                    </Text>
                  ) : self ? (
                    <ConfirmButton
                      label="Leave"
                      ariaLabel={`Leave ${org.name}`}
                      title={`Leave ${org.name}?`}
                      message="You lose access to its robots at once. Only a new invitation brings you back."
                      loading={remove.isPending}
                      onConfirm={() => remove.mutate(member)}
                    />
                  ) : (
                    manageable && (
                      <ConfirmButton
                        label="Remove"
                        ariaLabel={`Remove ${whoIs(member)}`}
                        title={`Remove ${whoIs(member)}?`}
                        message={`They lose access to ${org.name} and its robots at once. Only a new invitation brings them back.`}
                        loading={remove.isPending}
                        onConfirm={() => remove.mutate(member)}
                      />
                    )
                  )}
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

function MemberName(props: { readonly member: Member; readonly self: boolean }) {
  const { member, self } = props;
  const main = member.email ?? member.name ?? member.userId;
  return (
    <Stack gap={0}>
      <Text size="sm">
        {main}
        {self && (
          <Text span c="dimmed" size="sm">
            {' '}
            (you)
          </Text>
        )}
      </Text>
      {member.email !== null && member.name !== null && (
        <Text size="xs" c="dimmed">
          {member.name}
        </Text>
      )}
    </Stack>
  );
}

function RoleSelect(props: {
  readonly member: Member;
  readonly choices: readonly Role[];
  readonly value: Role;
  readonly disabled: boolean;
  readonly onChange: (role: Role) => void;
}) {
  return (
    <Select
      aria-label={`Role of ${whoIs(props.member)}`}
      data={[...props.choices]}
      value={props.value}
      allowDeselect={false}
      disabled={props.disabled}
      w={140}
      size="xs"
      onChange={(value) => {
        const role = ROLES.find((r) => r === value);
        if (role !== undefined && role !== props.member.role) props.onChange(role);
      }}
    />
  );
}
