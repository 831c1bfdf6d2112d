import { MantineProvider } from '@mantine/core';
import { act, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ApiError } from '../../api/errors';
import type { DrillResult, HaStatus } from '../../client/types.gen';
import { DrillDialog, drillRun, type DrillRun } from './DrillDialog';

const STATUS: HaStatus = {
  node: { name: 'lb1', role: 'maintenance', groups: [{ name: 'front', state: 'FAULT', since: '2026-03-01T12:00:00Z' }], maintenance: true, writer: false, priority: 150, certificate: null, software_version: '0.1.0', config_schema: 1 },
  peer: {
    name: 'lb2',
    url: 'https://10.0.0.2',
    reachable: true,
    last_seen: '2026-03-01T12:00:00Z',
    unreachable_since: null,
    role: 'active',
    groups: [{ name: 'front', state: 'MASTER', since: '2026-03-01T12:00:00Z' }],
    applied_revision: 3,
    writer: true,
    certificate: null,
    untrusted_certificate: null,
    clock_offset: null,
    software_version: '0.1.0',
    protocol: 2,
    config_schema: 1,
  },
  sync: { state: 'in_sync', local_revision: 3, local_hash: 'a', peer_revision: 3, peer_hash: 'a', since: null, message: '' },
  conn_sync: { enabled: true, interface: 'eth1', local_daemon: 'backup', local_connections: 40, peer_connections: 41 },
  split_brain: { active: false, since: null, groups: [], holding: false },
  active: { name: 'lb2', local: false, url: 'https://10.0.0.2', split_brain: false },
  transitions: [],
};

const RESULT: DrillResult = {
  handover_ms: 820,
  probe_failed: 2,
  probe_total: 61,
  probe_targets: ['192.0.2.10:80', '192.0.2.11:443'],
  connections_before: 37,
  peer_connections_after: 35,
  handback_ms: 1400,
  active_after: 'lb2',
  message: 'the probe runs on this node, whose own IPVS answers connects to the VIPs whether or not it holds them',
};

function show(run: DrillRun, handlers: { onRun?: () => void; onClose?: () => void } = {}) {
  return render(
    <MantineProvider>
      <DrillDialog run={run} status={STATUS} onRun={handlers.onRun ?? (() => {})} onClose={handlers.onClose ?? (() => {})} />
    </MantineProvider>,
  );
}

describe('DrillDialog', () => {
  it('asks first, and runs only on "Run the drill"', async () => {
    const onRun = vi.fn();
    const onClose = vi.fn();
    show({ phase: 'confirm' }, { onRun, onClose });
    expect(screen.getByRole('dialog', { name: 'Failover drill' })).toHaveTextContent('the drill times how long lb2 takes');
    await userEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(onClose).toHaveBeenCalledOnce();
    await userEvent.click(screen.getByRole('button', { name: 'Run the drill' }));
    expect(onRun).toHaveBeenCalledOnce();
  });

  it('shows progress while it runs, with the live VRRP groups, and cannot be closed then', () => {
    vi.useFakeTimers();
    try {
      const startedAt = Date.now();
      show({ phase: 'running', startedAt });
      const progress = screen.getByTestId('drill-progress');
      expect(progress).toHaveTextContent('Drill running… 0 s');
      act(() => {
        vi.advanceTimersByTime(3_000);
      });
      expect(progress).toHaveTextContent('Drill running… 3 s');
      expect(progress).toHaveTextContent('lb1front FAULT');
      expect(progress).toHaveTextContent('lb2front MASTER');
      expect(screen.queryByRole('button', { name: /close/i })).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it('shows the measured result: takeover time, probes, connection entries, the hand-back and the probe’s limit', async () => {
    const onClose = vi.fn();
    show({ phase: 'done', result: RESULT }, { onClose });
    const result = screen.getByTestId('drill-result');
    expect(result).toHaveTextContent('lb2 took over in 820 ms');
    expect(within(result).getByTestId('drill-handover')).toHaveTextContent('Time until lb2 held every VIP group: 820 ms.');
    expect(within(result).getByTestId('drill-probe')).toHaveTextContent('Requests probed: 61, failed: 2 (connects to 192.0.2.10:80, 192.0.2.11:443).');
    expect(within(result).getByTestId('drill-connections')).toHaveTextContent('Connection-sync entries: 37 on lb1 before, 35 on lb2 after.');
    expect(within(result).getByTestId('drill-handback')).toHaveTextContent('Hand-back: lb1 left maintenance and was ready again after 1400 ms. lb2 holds the VIPs now.');
    expect(within(result).getByTestId('drill-notes')).toHaveTextContent('whether or not it holds them');
    await userEvent.click(screen.getByRole('button', { name: 'Close' }));
    expect(onClose).toHaveBeenCalledOnce();
  });

  it('says what it could not measure, and a takeover that did not happen', () => {
    show({ phase: 'done', result: { ...RESULT, handover_ms: null, connections_before: null, peer_connections_after: null, handback_ms: null, active_after: null } });
    expect(screen.getByTestId('drill-result')).toHaveTextContent('lb2 did not take over every VIP group');
    expect(screen.getByTestId('drill-connections')).toHaveTextContent('not measured on lb1 before, not measured on lb2 after');
    expect(screen.getByTestId('drill-handback')).toHaveTextContent('did not report BACKUP or MASTER within 15 s. Neither node holds every VIP group now.');
  });

  it('shows a refusal with the API’s reason until it is closed', () => {
    show({ phase: 'refused', title: 'The drill did not run', reason: 'lb2 is unknown, not standby: it could not take over' });
    const refusal = screen.getByTestId('drill-refusal');
    expect(refusal).toHaveTextContent('The drill did not run');
    expect(refusal).toHaveTextContent('lb2 is unknown, not standby: it could not take over');
    expect(screen.getByRole('button', { name: 'Close' })).toBeInTheDocument();
  });
});

describe('drillRun', () => {
  const idle = { isPending: false, submittedAt: 0, data: undefined, error: null };
  it('follows the mutation: confirm, running, done, refused or failed', () => {
    expect(drillRun(idle)).toEqual({ phase: 'confirm' });
    expect(drillRun({ ...idle, isPending: true, submittedAt: 42 })).toEqual({ phase: 'running', startedAt: 42 });
    expect(drillRun({ ...idle, data: RESULT })).toEqual({ phase: 'done', result: RESULT });
    const refusal = new ApiError(409, { detail: 'lb2 is unknown, not standby: it could not take over' });
    expect(drillRun({ ...idle, error: refusal })).toEqual({ phase: 'refused', title: 'The drill did not run', reason: 'lb2 is unknown, not standby: it could not take over' });
    expect(drillRun({ ...idle, error: new ApiError(504, { detail: 'timed out' }) })).toMatchObject({ title: 'The drill failed', reason: 'timed out' });
  });
});
