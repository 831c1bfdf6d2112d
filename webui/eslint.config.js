// Lint for the dashboard (make lint). Type-aware rules from typescript-eslint catch the bugs that
// tsc lets through (floating promises, misused async callbacks); react-hooks catches stale hooks.
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // The generated OpenAPI client is checked by `make webui-client-check`, not edited by hand.
  { ignores: ['dist/', 'src/client/', 'playwright-report/', 'test-results/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.browser, ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    // The classic hook rules. The plugin's React Compiler rules (set-state-in-effect, refs, purity)
    // are left off: the dashboard is not built with the compiler, and they reject idioms it uses.
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
  { files: ['eslint.config.js'], extends: [tseslint.configs.disableTypeChecked] },
);
