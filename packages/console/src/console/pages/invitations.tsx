/**
 * "Invitations": an admin invites someone by email at a role they may give (`assignableRoles`),
 * sees the link to send once, and lists the invitations with their state, revoking pending ones.
 */
import { Badge, Button, Group, Paper, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { api, unwrap } from '../api/client.js';
import type { paths } from '../api/schema.js';
import type { MyOrg, Role } from '../auth.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorNote } from '../components/error-note.js';
import { CopyLine, ShownOnce } from '../components/secret.js';
import { Time } from '../components/time.js';
import { assignableRoles, mayManageRole, ROLES } from '../roles.js';

type Created =
  paths['/api/v1/orgs/{org}/invitations']['post']['responses'][201]['content']['application/json'];
type InvitationView = Created['invitation'];

const STATE_COLOURS: Record<InvitationView['state'], string> = {
  pending: 'blue',
  accepted: 'green',
  revoked: 'gray',
  expired: 'gray',
};

/** The invitations page of `org`. */
export function InvitationsPage(props: { readonly org: MyOrg }): ReactNode {
  const { org } = props;
  const [created, setCreated] = useState<Created>();
  return (
    <Stack maw={1000}>
      <Title order={2}>Invitations</Title>
      <Text>
        Invite someone to {org.name} by email. They join at the role invited when they sign in with that
        verified email address before the invitation expires, through its link or otherwise.
      </Text>
      <InviteForm org={org} onCreated={setCreated} />
      {created !== undefined && <NewInvitation created={created} />}
      <InvitationList org={org} />
    </Stack>
  );
}

function InviteForm(props: { readonly org: MyOrg; readonly onCreated: (created: Created) => void }) {
  const { org } = props;
  const queries = useQueryClient();
  const choices = assignableRoles(org.role);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>(
    choices.includes('operator') ? 'operator' : (choices[0] ?? 'viewer'),
  );
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/invitations', {
          params: { path: { org: org.id } },
          body: { email: email.trim(), role },
        }),
      ),
    onSuccess: (created) => {
      props.onCreated(created);
      notifications.show({
        color: 'green',
        message: `Invitation created for ${created.invitation.email} as ${created.invitation.role}.`,
      });
      setEmail('');
      return queries.invalidateQueries({ queryKey: ['invitations', org.id] });
    },
  });
  return (
    <Paper withBorder p="md">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <Group align="flex-end">
          <TextInput
            label="Email"
            type="email"
            placeholder="someone@example.com"
            required
            maxLength={254}
            value={email}
            onChange={(event) => setEmail(event.currentTarget.value)}
            w={300}
          />
          <Select
            label="Role"
            data={choices}
            value={role}
            allowDeselect={false}
            onChange={(value) => {
              const next = ROLES.find((r) => r === value);
              if (next !== undefined) setRole(next);
            }}
            w={160}
          />
          <Button type="submit" loading={create.isPending}>
            Invite
          </Button>
        </Group>
      </form>
      {create.isError && <ErrorNote title="No invitation was created" error={create.error} />}
    </Paper>
  );
}

function NewInvitation(props: { readonly created: Created }) {
  const { invitation, link } = props.created;
  return (
    <ShownOnce title={`Invitation created for ${invitation.email}`}>
      <Text size="sm">
        Send this link to {invitation.email}. It makes them {invitation.role} and expires{' '}
        <Time at={invitation.expiresAt} /> ({new Date(invitation.expiresAt).toLocaleString()}).
      </Text>
      <CopyLine label="Invitation link" value={link} />
    </ShownOnce>
  );
}

function InvitationList(props: { readonly org: MyOrg }) {
  const { org } = props;
  const queries = useQueryClient();
  const invitations = useQuery({
    queryKey: ['invitations', org.id],
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}/invitations', { params: { path: { org: org.id } } })),
  });
  const revoke = useMutation({
    mutationFn: (invitation: InvitationView) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/invitations/{id}', {
          params: { path: { org: org.id, id: invitation.id } },
        }),
      ),
    onSuccess: (_answer, invitation) => {
      notifications.show({ color: 'green', message: `The invitation for ${invitation.email} was revoked.` });
    },
    onSettled: () => queries.invalidateQueries({ queryKey: ['invitations', org.id] }),
  });
  if (invitations.isPending) return <Text c="dimmed">Loading invitations…</Text>;
  if (invitations.isError) return <ErrorNote error={invitations.error} />;
  const list = invitations.data.invitations;
  if (list.length === 0) return <Text c="dimmed">No invitation yet.</Text>;
  // Names each Revoke button uniquely even when one address has several pending invitations.
  const pendingPerEmail = new Map<string, number>();
  for (const i of list) {
    if (i.state === 'pending') pendingPerEmail.set(i.email, (pendingPerEmail.get(i.email) ?? 0) + 1);
  }
  const revokeName = (i: InvitationView) =>
    (pendingPerEmail.get(i.email) ?? 0) > 1
      ? `Revoke invitation for ${i.email} as ${i.role} created ${new Date(i.createdAt).toLocaleString()}`
      : `Revoke invitation for ${i.email}`;
  return (
    <Stack>
      <Title order={3}>All invitations</Title>
      {revoke.isError && <ErrorNote title="The invitation was not revoked" error={revoke.error} />}
      <Table striped aria-label="Invitations">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Email</Table.Th>
            <Table.Th>Role</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th>Expires</Table.Th>
            <Table.Th>Action</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.map((i) => (
            <Table.Tr key={i.id}>
              <Table.Td>{i.email}</Table.Td>
              <Table.Td>{i.role}</Table.Td>
              <Table.Td>
                <Badge color={STATE_COLOURS[i.state]} variant="light">
                  {i.state}
                </Badge>
              </Table.Td>
              <Table.Td>
                <Time at={i.createdAt} />
              </Table.Td>
              <Table.Td>
                <Time at={i.expiresAt} />
              </Table.Td>
              <Table.Td>
                {i.state === 'pending' && mayManageRole(org.role, i.role) && (
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={revokeName(i)}
                    title={`Revoke the invitation for ${i.email}?`}
                    message="The link stops working at once. You can invite them again later."
                    loading={revoke.isPending}
                    onConfirm={() => revoke.mutate(i)}
                  />
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
