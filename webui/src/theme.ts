import { createTheme } from '@mantine/core';

// State colours are used consistently everywhere: green up, red down, yellow drained/pending,
// gray disabled/unknown.
export const theme = createTheme({
  primaryColor: 'indigo',
  defaultRadius: 'sm',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif',
  fontFamilyMonospace: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
});
