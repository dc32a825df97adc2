/**
 * The console's frame and its pages. Each page lives at a fragment path; the navigation lists only
 * what the person's role in the selected organisation allows (`roles.ts`), and the API refuses
 * the rest anyway.
 */
import {
  AppShell,
  Burger,
  Button,
  Center,
  Group,
  Loader,
  Menu,
  NavLink,
  Select,
  Text,
  Title,
} from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { lazy, type ReactNode, Suspense, useEffect } from 'react';
import { Link, Redirect, Route, Router, Switch, useLocation, useParams } from 'wouter';
import { type MyOrg, useMe, useSession } from './auth.js';
import { ErrorNote } from './components/error-note.js';
import { SessionEndedDialog } from './components/session-ended.js';
import { navigate, useHashLocation } from './hash-location.js';
import { ApiKeysPage } from './pages/api-keys.js';
import { AuditPage } from './pages/audit.js';
import { EnrolmentPage } from './pages/enrolment.js';
import { FleetPage } from './pages/fleet.js';
import { InvitationsPage } from './pages/invitations.js';
import { InvitePage } from './pages/invite.js';
import { MembersPage } from './pages/members.js';
import { NoOrganisationPage } from './pages/no-organisation.js';
import { RobotPage } from './pages/robot.js';
import { SignInPage } from './pages/sign-in.js';
import { UnclaimedPage } from './pages/unclaimed.js';
import { can, type Permission } from './roles.js';

// The cockpit (WebCodecs, WebTransport, the FEC kernel) loads only when a robot is opened.
const PilotPage = lazy(() => import('./pages/pilot.js').then((m) => ({ default: m.PilotPage })));

/** The organisation last opened, for `#/`. */
const LAST_ORG_KEY = 'svc.console.org';

/** Pages of an organisation, in navigation order. */
const ORG_PAGES: readonly { path: string; label: string; permission: Permission }[] = [
  { path: 'fleet', label: 'Fleet', permission: 'org.read' },
  { path: 'enrolment', label: 'Enrol a robot', permission: 'robots.manage' },
  { path: 'members', label: 'Members', permission: 'org.read' },
  { path: 'invitations', label: 'Invitations', permission: 'members.manage' },
  { path: 'api-keys', label: 'API keys', permission: 'api-keys.manage' },
  { path: 'audit', label: 'Audit log', permission: 'audit.read' },
];

/** The console. */
export function App(): ReactNode {
  return (
    <Router hook={useHashLocation}>
      <SessionEndedDialog />
      <Switch>
        <Route path="/invite/*?" component={InvitePage} />
        <Route path="/unclaimed" component={UnclaimedPage} />
        <Route path="/orgs/:org/*?">
          <SignedIn>
            <OrgFrame />
          </SignedIn>
        </Route>
        <Route path="/">
          <SignedIn>
            <Home />
          </SignedIn>
        </Route>
        <Route>
          <Center h="60vh">
            <Text>
              No such page. <Link href="/">Go to the console's start</Link>.
            </Text>
          </Center>
        </Route>
      </Switch>
    </Router>
  );
}

/** Its children when someone is signed in; the sign-in page (returning here) otherwise. */
function SignedIn(props: { readonly children: ReactNode }): ReactNode {
  const { user } = useSession();
  if (user === null) return <SignInPage />;
  return props.children;
}

/** `#/`: the last organisation opened, the first one, or the "no organisation yet" page. */
function Home(): ReactNode {
  const me = useMe();
  if (me.isPending) return <Loading what="your account" />;
  if (me.isError) return <ErrorNote error={me.error} />;
  if (me.data.status === 'no-organisation' || me.data.orgs.length === 0) return <NoOrganisationPage />;
  const last = localStorage.getItem(LAST_ORG_KEY);
  const org = me.data.orgs.find((o) => o.id === last) ?? me.data.orgs[0]!;
  return <Redirect to={`/orgs/${org.id}/fleet`} replace />;
}

/** A page of one organisation, in the frame with the navigation. */
function OrgFrame(): ReactNode {
  const params = useParams<{ org: string }>();
  const me = useMe();
  const [opened, { toggle }] = useDisclosure();
  const orgId = params.org;
  useEffect(() => {
    if (orgId !== undefined) localStorage.setItem(LAST_ORG_KEY, orgId);
  }, [orgId]);
  if (me.isPending) return <Loading what="your account" />;
  if (me.isError) return <ErrorNote error={me.error} />;
  const org = me.data.orgs.find((o) => o.id === orgId);
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Navigation" />
            <Title order={1} size="h4">
              svc console
            </Title>
            <OrgSwitcher orgs={me.data.orgs} current={org} />
          </Group>
          <UserMenu name={me.data.user.email ?? me.data.user.name ?? me.data.user.id} />
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Pages">
        {org !== undefined &&
          ORG_PAGES.filter((page) => can(org.role, page.permission)).map((page) => (
            <OrgNavLink key={page.path} org={org.id} path={page.path} label={page.label} />
          ))}
      </AppShell.Navbar>
      <AppShell.Main>
        {org === undefined ? (
          <ErrorNote
            error={
              new Error(
                'You are not a member of this organisation (or it no longer exists). Pick one of yours above.',
              )
            }
          />
        ) : (
          <OrgPages org={org} />
        )}
      </AppShell.Main>
    </AppShell>
  );
}

function OrgPages(props: { readonly org: MyOrg }): ReactNode {
  const { org } = props;
  return (
    <Switch>
      <Route path="/orgs/:org/fleet">
        <FleetPage org={org} />
      </Route>
      <Route path="/orgs/:org/robots/:robot/pilot">
        {(params) => (
          <Suspense fallback={<Loading what="the cockpit" />}>
            <PilotPage org={org} robotId={params.robot} />
          </Suspense>
        )}
      </Route>
      <Route path="/orgs/:org/robots/:robot">
        {(params) => <RobotPage org={org} robotId={params.robot} />}
      </Route>
      <Route path="/orgs/:org/enrolment">
        <Allowed org={org} permission="robots.manage">
          <EnrolmentPage org={org} />
        </Allowed>
      </Route>
      <Route path="/orgs/:org/members">
        <MembersPage org={org} />
      </Route>
      <Route path="/orgs/:org/invitations">
        <Allowed org={org} permission="members.manage">
          <InvitationsPage org={org} />
        </Allowed>
      </Route>
      <Route path="/orgs/:org/api-keys">
        <Allowed org={org} permission="api-keys.manage">
          <ApiKeysPage org={org} />
        </Allowed>
      </Route>
      <Route path="/orgs/:org/audit">
        <Allowed org={org} permission="audit.read">
          <AuditPage org={org} />
        </Allowed>
      </Route>
      <Route>
        <Redirect to={`/orgs/${org.id}/fleet`} replace />
      </Route>
    </Switch>
  );
}

/** Its children when the role allows `permission`; otherwise a note saying who may. */
function Allowed(props: {
  readonly org: MyOrg;
  readonly permission: Permission;
  readonly children: ReactNode;
}) {
  if (can(props.org.role, props.permission)) return props.children;
  return (
    <ErrorNote
      error={new Error(`As ${props.org.role} of ${props.org.name} you cannot open this page; ask an admin.`)}
    />
  );
}

function OrgNavLink(props: { readonly org: string; readonly path: string; readonly label: string }) {
  const [location] = useLocation();
  const href = `/orgs/${props.org}/${props.path}`;
  const active =
    location.startsWith(href) || (props.path === 'fleet' && location.startsWith(`/orgs/${props.org}/robots`));
  return (
    <NavLink
      component={Link}
      href={href}
      label={props.label}
      active={active}
      aria-current={active ? 'page' : undefined}
    />
  );
}

function OrgSwitcher(props: { readonly orgs: readonly MyOrg[]; readonly current: MyOrg | undefined }) {
  if (props.orgs.length === 0) return null;
  return (
    <Select
      aria-label="Organisation"
      data={props.orgs.map((o) => ({ value: o.id, label: `${o.name} (${o.role})` }))}
      value={props.current?.id ?? null}
      allowDeselect={false}
      onChange={(id) => {
        if (id !== null) navigate(`/orgs/${id}/fleet`);
      }}
      w={260}
      visibleFrom="xs"
    />
  );
}

function UserMenu(props: { readonly name: string }) {
  const { signOut } = useSession();
  return (
    <Menu position="bottom-end">
      <Menu.Target>
        <Button variant="subtle" aria-label={`Account: ${props.name}`}>
          {props.name}
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Item onClick={() => void signOut()}>Sign out</Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}

/** A centred spinner naming what it waits for. */
export function Loading(props: { readonly what: string }): ReactNode {
  return (
    <Center h="40vh">
      <Group>
        <Loader size="sm" />
        <Text c="dimmed">Loading {props.what}…</Text>
      </Group>
    </Center>
  );
}
