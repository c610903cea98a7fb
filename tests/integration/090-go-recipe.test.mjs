// 090: a Go server built by whoami-protocol's recipe (wtproxy fingerprint
// before go build, the binary answering the fingerprint's object), as a Go
// user adopts it. Seen in a Go user's walk: the recipe fingerprinted only
// the .go files and go.mod/go.sum, so a template the binary embeds with
// //go:embed was served old after an edit while wtproxy said verified.
// Now doctor's go-embed check reads the module's //go:embed lines and
// names each embedded file the fingerprint leaves out, with the start
// that includes it; with that start the template's edit restarts the
// server, which serves the new page. And doctor's playwright check, when
// webServer runs `go run` and the .wtproxy the fingerprinting recipe,
// makes webServer run the .wtproxy's start, never the reverse (which
// drops the fingerprint: a 409 loop). Real go (stdlib only), its caches
// under the test's folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, commitWorktree, startDaemon, cli, lsJson, curlFrom, waitFor, pidAlive, sanitizerClean } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

// The recipe's start, with extra includes after go.sum's.
const recipe = (extra = '') => "mkdir -p .wtproxy-run && wtproxy fingerprint . --json --include '**/*.go' " +
  `--include '**/go.mod' --include '**/go.sum'${extra} > .wtproxy-run/fp.json && ` +
  'go build -o .wtproxy-run/app . && exec .wtproxy-run/app -port {port}';

// whoami-protocol's Go server, with its page a template it embeds.
const MAIN_GO = `package main

import (
	"embed"
	"encoding/json"
	"flag"
	"html/template"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

//go:embed templates/*.html
var templates embed.FS

func main() {
	port := flag.String("port", os.Getenv("PORT"), "the port to listen on")
	flag.Parse()
	page := template.Must(template.ParseFS(templates, "templates/index.html"))
	fp, _ := os.ReadFile(".wtproxy-run/fp.json")
	cwd, _ := os.Getwd()
	checkout, _ := filepath.EvalSymlinks(cwd)
	who, _ := json.Marshal(map[string]any{"wtproxy_whoami": 1, "checkout": checkout,
		"pid": os.Getpid(), "started_at": time.Now().UTC().Format(time.RFC3339Nano),
		"reloads": false, "fingerprint": json.RawMessage(fp)})
	http.HandleFunc("/__whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(who)
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { page.Execute(w, nil) })
	panic(http.ListenAndServe("127.0.0.1:"+*port, nil))
}
`;

// A repo of that app, its .wtproxy on front with start, and worktree a.
function goApp(t, front, start) {
  const tmp = makeWorktrees(t, []);
  fs.writeFileSync(path.join(tmp.repo, 'go.mod'), 'module example.com/app\n\ngo 1.19\n');
  fs.writeFileSync(path.join(tmp.repo, 'main.go'), MAIN_GO);
  fs.mkdirSync(path.join(tmp.repo, 'templates'));
  fs.writeFileSync(path.join(tmp.repo, 'templates', 'index.html'), '<h1 id="greeting">Hello</h1>\n');
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), `start = ${start}\nfront = ${front}\n`);
  return commitWorktree(tmp, 'a');
}

// go's caches in the test's folder, its build settings the machine's none.
const goEnv = (root) => ({
  GOCACHE: path.join(root, 'gocache'), GOPATH: path.join(root, 'gopath'), GOFLAGS: '',
  GOPROXY: 'off', GOTOOLCHAIN: 'local',
});

// `wtproxy doctor --json` in cwd: its checks by name.
async function doctor(tmp, cwd, env = {}) {
  const r = await cli(tmp, ['doctor', '--json'], {
    cwd, ms: 30000,
    env: { PGHOST: '', PGPORT: '', PGDATABASE: '', WTPROXY_DB_SERVER: '', PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}`, ...env },
  });
  sanitizerClean(assert, r.stderr);
  return Object.fromEntries(JSON.parse(r.stdout).checks.map((c) => [c.name, c]));
}

// The page the daemon serves to a caller in cwd.
async function page(cwd, port) {
  const r = await curlFrom(cwd, port);
  assert.equal(r.status, 200, r.body);
  return r.body;
}

test('go-embed: an embedded template the fingerprint leaves out is named; the fix pasted makes its edit restart the server', async (t) => {
  // The servers' wrappers seen, stopped before the folders go.
  const wrappers = new Set();
  t.after(() => {
    for (const pid of wrappers) if (pidAlive(pid)) try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
  });
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0, ['--stale-grace', '300ms'], { env: goEnv(tmp0.root) });
  const tmp = goApp(t, px.port, recipe());
  const wt = tmp.wt.a;
  const template = path.join(wt, 'templates', 'index.html');
  const entry = async () => {
    const [e] = await lsJson(tmp0);
    if (e?.pid) wrappers.add(e.pid);
    return e;
  };

  let d = await doctor(tmp0, wt);
  const g = d['go-embed'];
  assert.equal(g?.status, 'problem', JSON.stringify(g));
  assert.equal(g.detail, "the .wtproxy's start runs `wtproxy fingerprint` before `go build`, but its includes " +
    "('**/*.go', '**/go.mod', '**/go.sum') leave out templates/index.html, which main.go's //go:embed " +
    'templates/*.html embeds: an edit there is built into the next server yet moves no fingerprint, so ' +
    'wtproxy calls a server that serves the old file verified and never restarts it');
  const fixed = recipe(" --include 'templates/**'");
  assert.equal(g.fix, `in .wtproxy write: start = ${fixed}, then: wtproxy restart`);

  // As the recipe was: the edited template is served old, called verified.
  assert.match(await page(wt, px.port), /Hello/);
  await entry();
  fs.writeFileSync(template, '<h1 id="greet">Howdy</h1>\n');
  await new Promise((r) => setTimeout(r, 1000)); // past stale_grace and the watcher's settling
  assert.match(await page(wt, px.port), /Hello/, 'the recipe without the template: served old');
  assert.equal((await entry()).whoami.state, 'verified');

  // The fix, pasted: the start it prints, then its restart.
  fs.writeFileSync(path.join(wt, '.wtproxy'), `start = ${g.fix.match(/start = (.*), then: /)[1]}\nfront = ${px.port}\n`);
  const restarted = await cli(tmp0, g.fix.replace(/.*then: wtproxy /, '').split(' '), { cwd: wt, ms: 60000 });
  assert.equal(restarted.code, 0, restarted.stdout + restarted.stderr);
  d = await doctor(tmp0, wt);
  assert.equal(d['go-embed'].status, 'ok', d['go-embed'].detail);
  assert.match(d['go-embed'].detail, /match the 1 files the module's \/\/go:embed lines embed/);
  assert.match(await page(wt, px.port), /Howdy/, 'the restart built the edited template in');

  // Now an edit to the template makes the server stale: the next request
  // restarts it ("reloads": false) and gets the new page.
  const before = await entry();
  fs.writeFileSync(template, '<h1 id="greet">Hi again</h1>\n');
  await waitFor(async () => ['changed', 'stale'].includes((await entry())?.whoami?.state), 5000,
    'the template\'s edit moves the fingerprint');
  assert.match(await page(wt, px.port), /Hi again/, 'the edited template served, by a new server');
  const after = await entry();
  assert.ok(after.started_ms > before.started_ms, 'the server was restarted for the edit');
});

test('playwright: webServer runs `go run`, the .wtproxy the fingerprinting recipe: the fix makes webServer run the recipe', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const front = px.port;
  const tmp = goApp(t, front, recipe(" --include 'templates/**'"));
  const wt = tmp.wt.a;
  const config = path.join(wt, 'playwright.config.mjs');
  const write = (command) => fs.writeFileSync(config,
    `export default { use: { baseURL: 'http://localhost:${front}' },\n` +
    `  webServer: { command: ${command}, url: 'http://localhost:${front}', reuseExistingServer: true } };\n`);
  write(`'wtproxy run --front ${front} -- go run . -port {port}'`);
  let p = (await doctor(tmp0, wt)).playwright;
  assert.equal(p.status, 'problem', p.detail);
  assert.match(p.detail, /webServer\.command runs `go run \. -port \{port\}` through wtproxy run, but the \.wtproxy declares `mkdir -p/);
  assert.doesNotMatch(p.fix, /start = go run/, 'never: the recipe replaced by go run (no fingerprint, a 409 loop)');
  const cmd = `wtproxy run --front ${front} -- sh -c "${recipe(" --include 'templates/**'")}"`;
  assert.equal(p.fix, "make them one command, the .wtproxy's (it fingerprints the code before the build, " +
    `webServer's does not): in playwright.config.mjs write command: \`${cmd}\``);

  // Pasted as it is printed (a template string): the same command, ok.
  write(p.fix.match(/write command: (`.*`)$/)[1]);
  p = (await doctor(tmp0, wt)).playwright;
  assert.equal(p.status, 'ok', p.detail);
  assert.match(p.detail, /the \.wtproxy declares the same command/);

  // The start in a script: webServer is told to run the script.
  fs.mkdirSync(path.join(wt, 'scripts'));
  fs.writeFileSync(path.join(wt, 'scripts', 'dev-server.sh'), `#!/bin/sh\n${recipe().replace('{port}', '$1')}\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(wt, '.wtproxy'), `start = scripts/dev-server.sh {port}\nfront = ${front}\n`);
  write(`'wtproxy run --front ${front} -- go run . -port {port}'`);
  p = (await doctor(tmp0, wt)).playwright;
  assert.equal(p.status, 'problem', p.detail);
  assert.match(p.fix, new RegExp(`write command: \`wtproxy run --front ${front} -- scripts/dev-server\\.sh \\{port\\}\`$`));
  // A start with both quotes, which no JavaScript string holds without a
  // backslash: into a script both run.
  fs.writeFileSync(path.join(wt, '.wtproxy'), `start = ${recipe()} -greeting "it's me"\nfront = ${front}\n`);
  p = (await doctor(tmp0, wt)).playwright;
  assert.match(p.fix, new RegExp(`move its start into a script and run it from both: start = \\./dev-server\\.sh \\{port\\} in \\.wtproxy, and in playwright\\.config\\.mjs command: 'wtproxy run --front ${front} -- \\./dev-server\\.sh \\{port\\}'$`));
  // A start that only differs (no fingerprint, not holding webServer's):
  // webServer's command goes to the .wtproxy, as before.
  fs.writeFileSync(path.join(wt, '.wtproxy'), `start = .wtproxy-run/app -port {port}\nfront = ${front}\n`);
  p = (await doctor(tmp0, wt)).playwright;
  assert.equal(p.fix, 'make them one command: start = go run . -port {port} in .wtproxy');
});
