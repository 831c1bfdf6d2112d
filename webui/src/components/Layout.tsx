import { ActionIcon, AppShell, Badge, Burger, Group, Menu, NavLink, Text, Tooltip, useMantineColorScheme, useComputedColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import {
  IconActivity,
  IconBell,
  IconBook,
  IconCertificate,
  IconCpu,
  IconDatabaseExport,
  IconGauge,
  IconFileImport,
  IconFileText,
  IconHistory,
  IconKey,
  IconListDetails,
  IconLock,
  IconLogout,
  IconMoon,
  IconNetwork,
  IconRoute,
  IconServer2,
  IconSettings,
  IconShieldLock,
  IconStethoscope,
  IconSun,
  IconTopologyStar3,
  IconUsers,
} from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { NavLink as RouterLink, useLocation } from 'react-router';
import { logoutMutation } from '../api/queries/auth';
import { statusQuery } from '../api/queries/status';
import { StreamProvider, useStream } from '../api/stream';
import { useCan, useCurrentUser } from '../auth/useCurrentUser';
import { ConfirmBanner } from './ConfirmBanner';
import { PendingChangesBar } from './PendingChangesBar';
import { StandbyBanner } from './StandbyBanner';

const NAV: NavItem[] = [
  { to: '/', label: 'Overview', icon: IconGauge },
  { to: '/services', label: 'Services', icon: IconServer2 },
  { to: '/ha', label: 'High availability', icon: IconTopologyStar3 },
  { to: '/bgp', label: 'Cluster & BGP', icon: IconRoute },
  // Top level, not System: it is configuration every role reads and a commit applies, like the firewall.
  { to: '/network', label: 'Network', icon: IconNetwork },
  { to: '/firewall', label: 'Firewall', icon: IconShieldLock },
  { to: '/revisions', label: 'Revisions', icon: IconHistory },
  { to: '/import', label: 'Import', icon: IconFileImport },
  { to: '/events', label: 'Events & audit', icon: IconListDetails },
  { to: '/guide', label: 'Scheduling guide', icon: IconBook },
];

type NavItem = { to: string; label: string; icon: typeof IconGauge };

/** The node's own pages, one group: operators see Logs and Diagnostics, admins everything. */
function systemItems(canOperate: boolean, isAdmin: boolean): NavItem[] {
  const operate = [
    { to: '/system/logs', label: 'Logs', icon: IconFileText },
    { to: '/system/diagnostics', label: 'Diagnostics', icon: IconStethoscope },
  ];
  const administer = [
    { to: '/alerts', label: 'Alerts', icon: IconBell },
    { to: '/system/backup', label: 'Backup', icon: IconDatabaseExport },
    { to: '/system/certificate', label: 'Certificate', icon: IconCertificate },
    { to: '/system/firmware', label: 'Firmware', icon: IconCpu },
  ];
  return [...(canOperate ? operate : []), ...(isAdmin ? administer : [])];
}

const isActive = (to: string, pathname: string) => (to === '/' ? pathname === '/' : pathname.startsWith(to));

export function Layout({ children }: { children: ReactNode }) {
  const [opened, { toggle, close }] = useDisclosure();
  const { pathname } = useLocation();
  const isAdmin = useCan('manageUsers');
  const canOperate = useCan('commit');
  // Users is about people, not this node: it stays a top-level entry next to the other admin task lists.
  const items = isAdmin ? [...NAV, { to: '/users', label: 'Users', icon: IconUsers }] : NAV;
  const system = systemItems(canOperate, isAdmin);
  const link = ({ to, label, icon: Icon }: NavItem) => (
    <NavLink
      key={to}
      component={RouterLink}
      to={to}
      label={label}
      leftSection={<Icon size={18} />}
      active={isActive(to, pathname)}
      onClick={close}
    />
  );
  return (
    <StreamProvider>
      <AppShell
        header={{ height: 52 }}
        navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }}
        footer={{ height: 0 }}
        padding="md"
      >
        <AppShell.Header>
          <Header opened={opened} toggle={toggle} />
        </AppShell.Header>
        <AppShell.Navbar p="xs" aria-label="Main navigation">
          {items.map(link)}
          {system.length > 0 && (
            <NavGroup label="System" icon={IconSettings} current={system.some(({ to }) => isActive(to, pathname))}>
              {system.map(link)}
            </NavGroup>
          )}
        </AppShell.Navbar>
        <AppShell.Main pb={80}>
          <StandbyBanner />
          <ConfirmBanner />
          {children}
        </AppShell.Main>
        <PendingChangesBar />
      </AppShell>
    </StreamProvider>
  );
}

/**
 * A folding group of the navigation: unfolded whenever one of its pages becomes the current one
 * (also when reached by a link elsewhere), otherwise as the user left it.
 */
function NavGroup({ label, icon: Icon, current, children }: { label: string; icon: typeof IconGauge; current: boolean; children: ReactNode }) {
  const [opened, setOpened] = useState(current);
  const [wasCurrent, setWasCurrent] = useState(current);
  if (current !== wasCurrent) {
    setWasCurrent(current);
    if (current) setOpened(true);
  }
  const id = `nav-group-${label.toLowerCase()}`; // a plain id: the e2e helper selects it with '#'
  return (
    <NavLink
      component="button"
      type="button"
      label={label}
      leftSection={<Icon size={18} />}
      opened={opened}
      onChange={setOpened}
      aria-expanded={opened}
      aria-controls={id}
      attributes={{ collapse: { id } }}
    >
      {children}
    </NavLink>
  );
}

function Header({ opened, toggle }: { opened: boolean; toggle: () => void }) {
  const status = useQuery(statusQuery());
  return (
    <Group h="100%" px="md" justify="space-between" wrap="nowrap">
      <Group gap="sm" wrap="nowrap">
        <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
        <Text fw={700} size="lg">
          Fulcrum
        </Text>
        {status.data && (
          <Text size="sm" c="dimmed" visibleFrom="xs" truncate>
            {status.data.node} · v{status.data.version}
          </Text>
        )}
      </Group>
      <Group gap="xs" wrap="nowrap">
        <LiveIndicator />
        <ThemeToggle />
        <UserMenu />
      </Group>
    </Group>
  );
}

function LiveIndicator() {
  const { state } = useStream();
  const label = { live: 'Live', connecting: 'Connecting', lost: 'Reconnecting' }[state];
  return (
    <Tooltip label={state === 'live' ? 'Receiving live statistics every second' : 'The live stream is interrupted; charts show a gap'}>
      <Badge variant="dot" color={state === 'live' ? 'green' : state === 'connecting' ? 'gray' : 'red'} leftSection={<IconActivity size={12} />} aria-label={label}>
        <Text span inherit visibleFrom="sm">
          {label}
        </Text>
      </Badge>
    </Tooltip>
  );
}

function ThemeToggle() {
  const { setColorScheme } = useMantineColorScheme();
  const computed = useComputedColorScheme('light');
  const next = computed === 'dark' ? 'light' : 'dark';
  return (
    <ActionIcon variant="default" size="lg" onClick={() => setColorScheme(next)} aria-label={`Switch to ${next} theme`}>
      {computed === 'dark' ? <IconSun size={18} /> : <IconMoon size={18} />}
    </ActionIcon>
  );
}

function UserMenu() {
  const user = useCurrentUser();
  const queryClient = useQueryClient();
  const logout = useMutation(logoutMutation(queryClient));
  return (
    <Menu position="bottom-end" withinPortal>
      <Menu.Target>
        <Badge component="button" variant="light" size="lg" style={{ cursor: 'pointer', textTransform: 'none' }} aria-label="Account menu">
          {user.username}
          <Text span inherit visibleFrom="sm">
            {' '}· {user.role}
          </Text>
        </Badge>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Item component={RouterLink} to="/tokens" leftSection={<IconKey size={16} />}>
          My API tokens
        </Menu.Item>
        <Menu.Item component={RouterLink} to="/account/password" leftSection={<IconLock size={16} />}>
          Change my password
        </Menu.Item>
        <Menu.Item leftSection={<IconLogout size={16} />} onClick={() => logout.mutate()}>
          Sign out
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}
