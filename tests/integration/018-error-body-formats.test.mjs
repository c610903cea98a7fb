// 018: the body of an error wtproxy answers follows Accept: HTML when text/html
// is preferred, JSON ({error, status, message, fix}) when application/json
// is, plain text otherwise. Same 503 no-backend each time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy } from './lib/wtproxy.mjs';
import { RawConn, requestHead, header, closedPort, stopClean } from './lib/backends.mjs';

async function ask(port, accept) {
  const c = await RawConn.open(port);
  const hdrs = [['Host', 'localhost']];
  if (accept !== null) hdrs.push(['Accept', accept]);
  c.write(requestHead('GET', '/page', hdrs));
  const r = await c.readResponse();
  c.close();
  return r;
}

function assertHTML(r) {
  assert.match(header(r, 'content-type') || '', /^text\/html/, r.raw);
  const b = r.body.toString();
  assert.match(b, /<!doctype html|<html/i, b);
  assert.match(b, /<\/html>\s*$/i, 'HTML page not closed');
  assert.match(b, /503/);
  assert.match(b, /no-backend|backend/i);
}

function assertJSON(r, reason, status) {
  assert.match(header(r, 'content-type') || '', /^application\/json/, r.raw);
  let j;
  assert.doesNotThrow(() => { j = JSON.parse(r.body.toString()); }, `not valid JSON:\n${r.body}`);
  assert.equal(j.error, reason);
  assert.equal(j.status, status);
  assert.equal(typeof j.message, 'string');
  assert.ok(j.message.length > 0);
  assert.equal(typeof j.fix, 'string');
  assert.ok(j.fix.length > 0);
}

function assertText(r) {
  assert.match(header(r, 'content-type') || '', /^text\/plain/, r.raw);
  const b = r.body.toString();
  assert.doesNotMatch(b.trimStart(), /^[<{]/, `plain text expected:\n${b}`);
  assert.match(b, /backend/i);
}

test('Accept: text/html -> HTML page', async (t) => {
  const px = await startProxy(t, []);
  const r = await ask(px.port, 'text/html');
  assert.equal(r.status, 503);
  assert.equal(header(r, 'x-wtproxy-error'), 'no-backend');
  assertHTML(r);
  assert.equal(Number(header(r, 'content-length')), r.body.length);
  await stopClean(px);
});

test('a browser Accept header -> HTML page', async (t) => {
  const px = await startProxy(t, []);
  const r = await ask(px.port, 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8');
  assert.equal(r.status, 503);
  assertHTML(r);
  await stopClean(px);
});

test('Accept: application/json -> JSON with error, status, message, fix', async (t) => {
  const px = await startProxy(t, []);
  const r = await ask(px.port, 'application/json');
  assert.equal(r.status, 503);
  assert.equal(header(r, 'x-wtproxy-error'), 'no-backend');
  assertJSON(r, 'no-backend', 503);
  await stopClean(px);
});

test('an API client Accept header (application/json, text/plain, */*) -> JSON', async (t) => {
  const px = await startProxy(t, []);
  const r = await ask(px.port, 'application/json, text/plain, */*');
  assertJSON(r, 'no-backend', 503);
  await stopClean(px);
});

test('Accept: */* and no Accept -> plain text', async (t) => {
  const px = await startProxy(t, []);
  for (const accept of ['*/*', null]) {
    const r = await ask(px.port, accept);
    assert.equal(r.status, 503);
    assert.equal(header(r, 'x-wtproxy-error'), 'no-backend');
    assertText(r);
  }
  await stopClean(px);
});

test('the JSON form for a 502 carries that status and reason', async (t) => {
  const port = await closedPort();
  const px = await startProxy(t, ['--backend', `127.0.0.1:${port}`]);
  const r = await ask(px.port, 'application/json');
  assert.equal(r.status, 502);
  assertJSON(r, 'backend-unreachable', 502);
  await stopClean(px);
});
