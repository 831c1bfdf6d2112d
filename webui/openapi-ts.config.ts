import { defineConfig } from '@hey-api/openapi-ts';

// Input: the schema dumped from the API package (webui.mk `webui-client`), so generation needs no
// running server and is deterministic. Output is committed; CI regenerates and diffs it.
export default defineConfig({
  input: process.env.FULCRUM_OPENAPI ?? './openapi/openapi.json',
  output: { path: process.env.FULCRUM_CLIENT_OUT ?? 'src/client' },
  plugins: [
    '@hey-api/typescript',
    '@hey-api/sdk',
    // Errors throw (TanStack Query expects a rejected promise); base URL is same-origin.
    { name: '@hey-api/client-fetch', throwOnError: true, baseUrl: false },
  ],
});
