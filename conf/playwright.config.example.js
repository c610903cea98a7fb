// @ts-check
// playwright.config.example.js - a Playwright config that works from every
// git worktree of an app at once, through wtproxy (conf/PLAYWRIGHT.md).
//
// Compared with the config the app had before wtproxy, ONE line changed:
// webServer.command is prefixed with `wtproxy run --` and the port it
// passes to the dev server is `{port}`. baseURL and webServer.url stay on
// localhost:8000, the port wtproxy owns.
//
// Test 130 (tests/integration/130-playwright-three-worktrees.test.mjs)
// runs this recipe from three worktrees in parallel, with Debian's Chromium.
import { defineConfig, devices } from '@playwright/test';

export default defineConfig({
  testDir: './e2e',
  use: {
    baseURL: 'http://localhost:8000',
    ...devices['Desktop Chrome'],
  },
  webServer: {
    // before: command: 'python3 manage.py runserver 8000',
    command: 'wtproxy run -- python3 manage.py runserver 127.0.0.1:{port}',
    // Vite:   command: 'wtproxy run -- npx vite --host 127.0.0.1 --port {port} --strictPort',
    // a URL (not `port`): wtproxy answers 503 for a worktree that has no
    // server yet, which Playwright reads as "not ready" and so starts the
    // command; 200-403 from the worktree's own server means ready.
    url: 'http://localhost:8000/',
    // true: a server this worktree already runs (`wtproxy run` in a
    // terminal) is reused; another worktree's server never answers here.
    // `!process.env.CI` works as well.
    reuseExistingServer: true,
    // default 60 s; wtproxy holds the readiness requests while the server
    // starts, so a slow first start is fine
    timeout: 120_000,
  },
});
