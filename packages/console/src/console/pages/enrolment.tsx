/**
 * "Create enrolment token" (spec section 3): an admin makes a one-time token for a new robot, sees
 * it once with its expiry and the commands to run on the robot, and lists and revokes the tokens
 * not yet used.
 */
import {
  Badge,
  Button,
  Group,
  NumberInput,
  Paper,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { api, unwrap } from '../api/client.js';
import type { paths } from '../api/schema.js';
import type { MyOrg } from '../auth.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorNote } from '../components/error-note.js';
import { CopyLine, ShownOnce } from '../components/secret.js';
import { Time } from '../components/time.js';

type Created =
  paths['/api/v1/orgs/{org}/enrolment-tokens']['post']['responses'][201]['content']['application/json'];
type TokenView = Created['enrolmentToken'];

const STATE_COLOURS: Record<TokenView['state'], string> = {
  unused: 'blue',
  redeemed: 'green',
  expired: 'gray',
  revoked: 'gray',
};

/** The enrolment page of `org`. */
export function EnrolmentPage(props: { readonly org: MyOrg }): ReactNode {
  const { org } = props;
  const [created, setCreated] = useState<Created>();
  return (
    <Stack maw={900}>
      <Title order={2}>Enrol a robot</Title>
      <Text>
        A robot joins {org.name} by redeeming a one-time enrolment token. Create one here, then run the
        command on the robot (with <code>svcd</code> installed and its configuration written).
      </Text>
      <CreateToken orgId={org.id} onCreated={setCreated} />
      {created !== undefined && <NewToken created={created} />}
      <TokenList orgId={org.id} />
    </Stack>
  );
}

function CreateToken(props: { readonly orgId: string; readonly onCreated: (created: Created) => void }) {
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [hours, setHours] = useState<number | string>(24);
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/enrolment-tokens', {
          params: { path: { org: props.orgId } },
          body: {
            ...(name.trim() !== '' && { name: name.trim() }),
            expiresInHours: typeof hours === 'number' ? hours : Number(hours),
          },
        }),
      ),
    onSuccess: (created) => {
      props.onCreated(created);
      setName('');
      return queries.invalidateQueries({ queryKey: ['enrolment-tokens', props.orgId] });
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
            label="Name (optional)"
            description="Says which robot it is for"
            placeholder="warehouse-bot-7"
            value={name}
            onChange={(event) => setName(event.currentTarget.value)}
            maxLength={128}
          />
          <NumberInput
            label="Valid for (hours)"
            min={1}
            max={720}
            value={hours}
            onChange={setHours}
            w={140}
            allowDecimal={false}
          />
          <Button type="submit" loading={create.isPending}>
            Create enrolment token
          </Button>
        </Group>
      </form>
      {create.isError && <ErrorNote title="No token was created" error={create.error} />}
    </Paper>
  );
}

function NewToken(props: { readonly created: Created }) {
  const { token, enrolmentToken } = props.created;
  return (
    <ShownOnce title={`Enrolment token created${enrolmentToken.name ? ` for ${enrolmentToken.name}` : ''}`}>
      <Text size="sm">
        It expires <Time at={enrolmentToken.expiresAt} /> (
        {new Date(enrolmentToken.expiresAt).toLocaleString()}) and works once.
      </Text>
      <CopyLine label="Enrolment token" value={token} />
      <CopyLine
        label="Enrol from the robot"
        value={`svcd --config /etc/svcd/svcd.toml enrol --token ${token}`}
      />
      <CopyLine
        label="Or enrol on the daemon's first start"
        value={`SVC_ENROLMENT_TOKEN=${token} svcd --config /etc/svcd/svcd.toml`}
      />
    </ShownOnce>
  );
}

function TokenList(props: { readonly orgId: string }) {
  const queries = useQueryClient();
  const tokens = useQuery({
    queryKey: ['enrolment-tokens', props.orgId],
    queryFn: () =>
      unwrap(api.GET('/api/v1/orgs/{org}/enrolment-tokens', { params: { path: { org: props.orgId } } })),
  });
  const revoke = useMutation({
    mutationFn: (id: string) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/enrolment-tokens/{id}', {
          params: { path: { org: props.orgId, id } },
        }),
      ),
    onSettled: () => queries.invalidateQueries({ queryKey: ['enrolment-tokens', props.orgId] }),
  });
  if (tokens.isPending) return <Text c="dimmed">Loading tokens…</Text>;
  if (tokens.isError) return <ErrorNote error={tokens.error} />;
  const unused = tokens.data.enrolmentTokens.filter((t) => t.state === 'unused');
  const others = tokens.data.enrolmentTokens.filter((t) => t.state !== 'unused').slice(0, 20);
  return (
    <Stack>
      <Title order={3}>Unused tokens</Title>
      {revoke.isError && <ErrorNote title="The token was not revoked" error={revoke.error} />}
      {unused.length === 0 ? (
        <Text c="dimmed">No unused token.</Text>
      ) : (
        <TokenTable
          tokens={unused}
          action={(t) => (
            <ConfirmButton
              label="Revoke"
              ariaLabel={`Revoke token ${t.name ?? t.id}`}
              title="Revoke this enrolment token?"
              message="A robot that has not enrolled with it yet will be refused. Robots already enrolled are not affected."
              onConfirm={() => revoke.mutate(t.id)}
            />
          )}
        />
      )}
      {others.length > 0 && (
        <>
          <Title order={3}>Recent used, expired and revoked tokens</Title>
          <TokenTable tokens={others} />
        </>
      )}
    </Stack>
  );
}

function TokenTable(props: {
  readonly tokens: readonly TokenView[];
  readonly action?: (token: TokenView) => ReactNode;
}) {
  return (
    <Table striped>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Name</Table.Th>
          <Table.Th>State</Table.Th>
          <Table.Th>Created</Table.Th>
          <Table.Th>Expires</Table.Th>
          <Table.Th>Robot</Table.Th>
          {props.action !== undefined && <Table.Th>Action</Table.Th>}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {props.tokens.map((t) => (
          <Table.Tr key={t.id}>
            <Table.Td>{t.name ?? <Text c="dimmed">unnamed</Text>}</Table.Td>
            <Table.Td>
              <Badge color={STATE_COLOURS[t.state]} variant="light">
                {t.state}
              </Badge>
            </Table.Td>
            <Table.Td>
              <Time at={t.createdAt} />
            </Table.Td>
            <Table.Td>
              <Time at={t.expiresAt} />
            </Table.Td>
            <Table.Td>{t.redeemedBy ?? ''}</Table.Td>
            {props.action !== undefined && <Table.Td>{props.action(t)}</Table.Td>}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
