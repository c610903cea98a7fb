// echo.mjs - one request, written byte for byte, through a fresh daemon to
// an echoing backend (backends.mjs's httpBackend answers with what it
// received as JSON): how the header tests (001, 002) see what a backend
// got.
import assert from 'node:assert/strict';
import { startProxy } from './wtproxy.mjs';
import { httpBackend, RawConn } from './backends.mjs';

// Start a backend and a daemon in front of it, send head (requestHead's
// bytes) on a raw connection, and read the answer, which must be 200.
// Resolves with { be, px, c, r, got }: the backend, the daemon, the still
// open connection, the response, and what the backend received (its JSON).
export async function echoRequest(t, head) {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(head);
  const r = await c.readResponse();
  assert.equal(r.status, 200, r.raw.slice(0, 300));
  return { be, px, c, r, got: JSON.parse(r.body.toString()) };
}
