// workspace.mjs - the folders a workspace member's server loads its code
// from: its own package folder and the members of its workspace it depends
// on (npm and yarn `workspaces`, pnpm-workspace.yaml), declared in its
// package.json and theirs, as npm, pnpm and Turborepo draw the graph.
//
// In a monorepo (apps/api, apps/web, packages/utils, a vendored tree) the
// API's fingerprint covered the whole checkout: 30,000 files hashed at
// each start and by the daemon at each check, and an edit of apps/web, a
// vendored file or a `git checkout` made the API stale and restarted it,
// holding requests 3.5-13.8 s (Playwright's 5 s expect timeout failed tests
// on correct code). Scoped to apps/api and packages/utils, an edit of the
// web app is none of its business, and one of packages/utils still is. A
// member that imports another without declaring it (npm's hoisting lets it)
// is not followed: declare the dependency, or pass include.
import fs from 'node:fs';
import path from 'node:path';

const inside = (d, top) => d === top || d.startsWith(top + path.sep);

function readJson(file) {
  try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return null; }
}

// The nearest folder from start (a file or folder) up to checkout holding
// a package.json, else null.
function packageDir(start, checkout) {
  let d;
  try { d = fs.statSync(start).isDirectory() ? start : path.dirname(start); } catch { return null; }
  for (; inside(d, checkout); d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, 'package.json'))) return d;
    if (d === checkout || path.dirname(d) === d) break;
  }
  return null;
}

// pnpm-workspace.yaml's packages list: its `- 'apps/*'` lines under `packages:`.
function pnpmPatterns(dir) {
  let text;
  try { text = fs.readFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'utf8'); } catch { return null; }
  const out = [];
  let inPackages = false;
  for (const line of text.split('\n')) {
    if (/^packages:\s*$/.test(line)) { inPackages = true; continue; }
    if (inPackages && /^\S/.test(line)) break;
    const m = inPackages && /^\s+-\s*['"]?([^'"#]+?)['"]?\s*(#.*)?$/.exec(line);
    if (m) out.push(m[1]);
  }
  return out.length ? out : null;
}

// The workspace patterns declared in dir, or null.
function workspacePatterns(dir) {
  const ws = readJson(path.join(dir, 'package.json'))?.workspaces;
  if (Array.isArray(ws)) return ws;
  if (Array.isArray(ws?.packages)) return ws.packages;
  return pnpmPatterns(dir);
}

// The folders under root a pattern names ("apps/*", "packages/**",
// "tools/cli"), each holding a package.json; "!..." patterns are skipped.
function expand(root, pattern) {
  const parts = pattern.replace(/^\.\//, '').replace(/\/$/, '').split('/');
  let dirs = [root];
  for (const part of parts) {
    const next = [];
    for (const d of dirs) {
      if (part === '**') { next.push(d, ...below(d)); continue; }
      if (!part.includes('*')) { next.push(path.join(d, part)); continue; }
      const re = new RegExp(`^${part.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
      for (const e of entries(d)) if (re.test(e.name)) next.push(path.join(d, e.name));
    }
    dirs = next;
  }
  return dirs.filter((d) => fs.existsSync(path.join(d, 'package.json')));
}

function entries(d) {
  try {
    return fs.readdirSync(d, { withFileTypes: true })
      .filter((e) => e.isDirectory() && e.name !== 'node_modules' && !e.name.startsWith('.'));
  } catch { return []; }
}

function below(d) {
  return entries(d).flatMap((e) => [path.join(d, e.name), ...below(path.join(d, e.name))]);
}

// name -> folder of each member of the workspace rooted at root.
function members(root, patterns) {
  const byName = new Map();
  for (const p of patterns) {
    if (p.startsWith('!')) continue;
    for (const d of expand(root, p)) {
      const name = readJson(path.join(d, 'package.json'))?.name;
      if (name && !byName.has(name)) byName.set(name, d);
    }
  }
  return byName;
}

const DEP_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'];

// member and the members it depends on, transitively.
function closure(member, byName) {
  const folders = [member];
  for (let i = 0; i < folders.length; i++) {
    const pkg = readJson(path.join(folders[i], 'package.json')) || {};
    for (const field of DEP_FIELDS)
      for (const name of Object.keys(pkg[field] || {}))
        if (byName.has(name) && !folders.includes(byName.get(name))) folders.push(byName.get(name));
  }
  return folders;
}

// include (patterns under checkout, each "**/..." or not) scoped to the
// folders the server at start loads from, when start is in a workspace
// member below checkout: each "**/X" pattern once per folder ("apps/api/**/X"),
// and the workspace top's own files ("X", its package.json, tsconfig.json,
// .env). null when start is no such member: the checkout's patterns then.
export function workspaceInclude(checkout, include, start) {
  const member = packageDir(start, checkout);
  if (!member || member === checkout) return null;
  let root = null;
  for (let d = path.dirname(member); inside(d, checkout); d = path.dirname(d)) {
    if (workspacePatterns(d)) { root = d; break; }
    if (d === checkout) break;
  }
  if (!root) return null;
  const byName = members(root, workspacePatterns(root));
  if (![...byName.values()].includes(member)) return null;
  const rel = (d) => path.relative(checkout, d);
  const under = (d, p) => (rel(d) ? `${rel(d)}/${p}` : p);
  const scoped = [];
  for (const folder of closure(member, byName))
    for (const p of include) scoped.push(under(folder, p));
  for (const p of include) if (p.startsWith('**/')) scoped.push(under(root, p.slice(3)));
  return scoped;
}
