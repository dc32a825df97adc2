/**
 * "API keys": an admin creates a key for a customer backend with the scopes it needs, sees the
 * secret once, and lists the keys (never their secrets) with their last use, revoking them.
 */
import {
  Badge,
  Button,
  Checkbox,
  Code,
  Group,
  Paper,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { api, unwrap } from '../api/client.js';
import type { paths } from '../api/schema.js';
import type { MyOrg } from '../auth.js';
import { ConfirmButton } from '../components/confirm.js';
import { ErrorNote } from '../components/error-note.js';
import { CopyLine, ShownOnce } from '../components/secret.js';
import { Time } from '../components/time.js';

type ApiKeysPath = paths['/api/v1/orgs/{org}/api-keys']['post'];
type Created = ApiKeysPath['responses'][201]['content']['application/json'];
type ApiKeyView = Created['apiKey'];
/** A scope the API accepts, from its OpenAPI document. */
type Scope = ApiKeysPath['requestBody']['content']['application/json']['scopes'][number];

/** Every scope the API accepts (the `Record` fails to compile when the API adds or drops one). */
const SCOPES: Record<Scope, string> = {
  'sessions:mint': "Mint pilot session tokens: drive the organisation's robots, or what a grant allows",
  'robots:read': "List the organisation's robots and read their state",
};

/** The API keys page of `org`. */
export function ApiKeysPage(props: { readonly org: MyOrg }): ReactNode {
  const { org } = props;
  const [created, setCreated] = useState<Created>();
  return (
    <Stack maw={1000}>
      <Title order={2}>API keys</Title>
      <Text>
        Your backends call svc-cloud for {org.name} with an API key in the header{' '}
        <Code>Authorization: Bearer …</Code>. A key does only what its scopes allow.
      </Text>
      <CreateKey orgId={org.id} onCreated={setCreated} />
      {created !== undefined && <NewKey created={created} />}
      <KeyList orgId={org.id} />
    </Stack>
  );
}

function CreateKey(props: { readonly orgId: string; readonly onCreated: (created: Created) => void }) {
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(['sessions:mint']);
  const [noScope, setNoScope] = useState(false);
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/api-keys', {
          params: { path: { org: props.orgId } },
          body: { name: name.trim(), scopes },
        }),
      ),
    onSuccess: (created) => {
      props.onCreated(created);
      notifications.show({ color: 'green', message: `API key ${created.apiKey.name} created.` });
      setName('');
      return queries.invalidateQueries({ queryKey: ['api-keys', props.orgId] });
    },
  });
  return (
    <Paper withBorder p="md">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (scopes.length === 0) {
            setNoScope(true);
            return;
          }
          create.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Name"
            description="Says which backend uses it"
            placeholder="booking-backend"
            required
            maxLength={100}
            value={name}
            onChange={(event) => setName(event.currentTarget.value)}
            w={300}
          />
          <Checkbox.Group
            label="Scopes"
            description="What the key may do"
            value={scopes}
            onChange={(value) => {
              setScopes(value.filter(isScope));
              setNoScope(false);
            }}
            error={noScope ? 'Pick at least one scope' : undefined}
          >
            <Stack gap="xs" mt="xs">
              {Object.entries(SCOPES).map(([scope, meaning]) => (
                <Checkbox key={scope} value={scope} label={scope} description={meaning} />
              ))}
            </Stack>
          </Checkbox.Group>
          <Group>
            <Button type="submit" loading={create.isPending}>
              Create API key
            </Button>
          </Group>
        </Stack>
      </form>
      {create.isError && <ErrorNote title="No API key was created" error={create.error} />}
    </Paper>
  );
}

function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}

function NewKey(props: { readonly created: Created }) {
  const { apiKey, key } = props.created;
  return (
    <ShownOnce title={`API key ${apiKey.name} created`}>
      <Text size="sm">Scopes: {apiKey.scopes.join(', ')}. It works until it is revoked.</Text>
      <CopyLine label="API key" value={key} />
    </ShownOnce>
  );
}

function KeyList(props: { readonly orgId: string }) {
  const queries = useQueryClient();
  const keys = useQuery({
    queryKey: ['api-keys', props.orgId],
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org}/api-keys', { params: { path: { org: props.orgId } } })),
  });
  const revoke = useMutation({
    mutationFn: (key: ApiKeyView) =>
      unwrap(
        api.DELETE('/api/v1/orgs/{org}/api-keys/{id}', {
          params: { path: { org: props.orgId, id: key.id } },
        }),
      ),
    onSuccess: (_answer, key) => {
      notifications.show({ color: 'green', message: `API key ${key.name} was revoked.` });
    },
    onSettled: () => queries.invalidateQueries({ queryKey: ['api-keys', props.orgId] }),
  });
  if (keys.isPending) return <Text c="dimmed">Loading API keys…</Text>;
  if (keys.isError) return <ErrorNote error={keys.error} />;
  const list = keys.data.apiKeys;
  return (
    <Stack>
      <Title order={3}>Keys</Title>
      {revoke.isError && <ErrorNote title="The API key was not revoked" error={revoke.error} />}
      {list.length === 0 ? (
        <Text c="dimmed">No API key yet.</Text>
      ) : (
        <Table striped aria-label="API keys">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Scopes</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th>Last used</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Action</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.map((k) => (
              <Table.Tr key={k.id}>
                <Table.Td>
                  <Text size="sm">{k.name}</Text>
                  <Text size="xs" c="dimmed" ff="monospace">
                    {k.prefix}…
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {k.scopes.map((scope) => (
                      <Badge key={scope} variant="outline" size="sm" tt="none">
                        {scope}
                      </Badge>
                    ))}
                  </Group>
                </Table.Td>
                <Table.Td>
                  <Time at={k.createdAt} />
                </Table.Td>
                <Table.Td>
                  <Time at={k.lastUsedAt} />
                </Table.Td>
                <Table.Td>
                  {k.revokedAt === null ? (
                    <Badge color="green" variant="light">
                      active
                    </Badge>
                  ) : (
                    <Group gap={4}>
                      <Badge color="gray" variant="light">
                        revoked
                      </Badge>
                      <Text size="xs" c="dimmed">
                        <Time at={k.revokedAt} />
                      </Text>
                    </Group>
                  )}
                </Table.Td>
                <Table.Td>
                  {k.revokedAt === null && (
                    <ConfirmButton
                      label="Revoke"
                      ariaLabel={`Revoke API key ${k.name} (${k.prefix})`}
                      title={`Revoke API key ${k.name}?`}
                      message="Backends using it are refused from now on. This cannot be undone; create a new key to replace it."
                      loading={revoke.isPending}
                      onConfirm={() => revoke.mutate(k)}
                    />
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
