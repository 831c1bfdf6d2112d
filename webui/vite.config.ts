/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The API serves the built UI itself, so the UI uses relative /api URLs; in development the Vite
// server forwards them (including the SSE stream) to a locally running API.
const api = process.env.FULCRUM_API ?? 'http://127.0.0.1:8123';

export default defineConfig({
  plugins: [react()],
  server: { proxy: { '/api': { target: api, changeOrigin: false } } },
  build: {
    outDir: 'dist',
    rollupOptions: {
      output: {
        // The charting library is only needed on pages with charts; keep vendor code cacheable.
        manualChunks: { react: ['react', 'react-dom', 'react-router'], mantine: ['@mantine/core', '@mantine/hooks'] },
      },
    },
  },
  test: {
    environment: 'jsdom',
    globals: true,
    setupFiles: ['src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
    css: false,
    // make test runs these at nice 10 beside the emulated VMs: a test that clicks through a dialog
    // took over the 5 s default there (it takes 1 to 4 s on an idle core).
    testTimeout: 20_000,
  },
});
