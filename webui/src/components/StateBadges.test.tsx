import { MantineProvider } from '@mantine/core';
import { render, screen } from '@testing-library/react';
import { BackendWarnings } from './StateBadges';

describe('BackendWarnings', () => {
  it('shows each warning in full, as a sentence', () => {
    render(
      <MantineProvider>
        <BackendWarnings
          warnings={[{ code: 'vip_missing', message: 'does not answer packets addressed to the VIP 192.0.2.10: add it to lo.' }]}
        />
      </MantineProvider>,
    );
    expect(screen.getByText('Does not answer packets addressed to the VIP 192.0.2.10: add it to lo.')).toBeInTheDocument();
  });

  it('shows nothing for a healthy backend', () => {
    const { container } = render(
      <MantineProvider>
        <BackendWarnings warnings={[]} />
      </MantineProvider>,
    );
    expect(container.querySelector('[data-warning]')).toBeNull();
  });
});
