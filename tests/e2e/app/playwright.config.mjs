// playwright.config.mjs - the shop's e2e config, as a project has it:
// baseURL on localhost:8000 and a webServer that starts the dev server
// unless one already answers there (reuseExistingServer).
//
// For wtproxy ONE line changes, webServer.command: the dev server is
// started through `wtproxy run`, on a port wtproxy picks ({port}), and
// wtproxy, owning localhost:8000, routes this worktree's requests to it
// (conf/PLAYWRIGHT.md, recipe "url"). Both lines are kept here so that the
// scenario (tests/e2e/run.mjs) runs one set of files in both modes:
// SHOP_WTPROXY=1 picks the wtproxy line. SHOP_FRONT moves the front port
// off 8000 (tests pick a free one); WTPROXY_BIN names the binary.
//
// Without wtproxy, the correct way to test worktrees side by side is a port
// per worktree: SHOP_PORT in the worktree's untracked .env.wt (beside its
// database names) replaces the port, as a developer edits it by hand.
import fs from 'node:fs';
import { defineConfig } from '@playwright/test';

const own = /^SHOP_PORT=(\d+)$/m.exec(fs.existsSync('.env.wt') ? fs.readFileSync('.env.wt', 'utf8') : '');
const front = own ? own[1] : process.env.SHOP_FRONT || '8000';
const wtproxy = process.env.WTPROXY_BIN || 'wtproxy';

export default defineConfig({
  testDir: './e2e',
  workers: 1,
  retries: 0,
  timeout: 15000,
  // server-rendered pages: what is not there at once will not come
  expect: { timeout: 1000 },
  reporter: 'line',
  use: {
    baseURL: `http://localhost:${front}`,
    browserName: 'chromium',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
  },
  webServer: {
    command: process.env.SHOP_WTPROXY
      ? `${wtproxy} run --front ${front} -- /usr/bin/python3 manage.py runserver 127.0.0.1:{port}` // with wtproxy
      : `/usr/bin/python3 manage.py runserver 127.0.0.1:${front}`, // before wtproxy
    url: `http://localhost:${front}/`,
    reuseExistingServer: true,
    timeout: 30000,
    stdout: 'pipe',
    stderr: 'pipe',
  },
});
