// load-client.mjs - the client side of the load tests (300-309), run as
// its own process so that it can stand in a worktree: the daemon then
// identifies it as that worktree's caller and routes by caller.
//
//   node load-client.mjs keepalive PORT N    N connections open at once, two
//        requests each (the second on the kept connection); prints
//        {"held":...} once all N are open and answered, then waits for a
//        line on stdin before closing them
//   node load-client.mjs short PORT N        N connections one after the other,
//        one request each with Connection: close
//   node load-client.mjs abort PORT N PATH   N clients, 50 at a time, each
//        reading the first bytes of PATH's response and then resetting
//
// Every 200's body must name the expected worktree ($EXPECT_WORKTREE);
// prints one JSON line of counts: {ok, errors, wrong, ...}.
import net from 'node:net';
import readline from 'node:readline';

const [mode, portArg, nArg, pathArg] = process.argv.slice(2);
const port = Number(portArg);
const n = Number(nArg);
const expect = process.env.EXPECT_WORKTREE;
const counts = { ok: 0, errors: 0, wrong: 0, firstError: null };

function fail(what) {
  counts.errors++;
  if (!counts.firstError) counts.firstError = String(what);
}

// One response from a socket's byte stream: resolves { status, body } once
// the head and Content-Length bytes of body are in.
function readResponse(s) {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const len = Number((/\r\ncontent-length: *(\d+)/i.exec(head) || [0, 0])[1]);
      if (buf.length < end + 4 + len) return;
      cleanup();
      resolve({ status: Number(head.split(' ')[1]), body: buf.subarray(end + 4, end + 4 + len).toString() });
    };
    const onEnd = () => { cleanup(); reject(new Error('closed before a whole response')); };
    if (s.destroyed || s.readableEnded) { onEnd(); return; }
    const onError = (e) => { cleanup(); reject(e); };
    const cleanup = () => { s.off('data', onData); s.off('end', onEnd); s.off('close', onEnd); s.off('error', onError); };
    s.on('data', onData);
    s.on('end', onEnd);
    s.on('close', onEnd);
    s.on('error', onError);
  });
}

function check(r) {
  if (r.status !== 200) return fail(`status ${r.status}: ${r.body.slice(0, 300)}`);
  let wt = null;
  try { wt = JSON.parse(r.body).worktree; } catch { /* not the server's JSON */ }
  if (expect && wt !== expect) { counts.wrong++; if (!counts.firstError) counts.firstError = `wrong body: ${r.body.slice(0, 300)}`; return; }
  counts.ok++;
}

function open() {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

const get = (close) => `GET /load HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;

async function exchange(s, close) {
  s.write(get(close));
  check(await readResponse(s));
}

async function keepalive() {
  const sockets = [];
  // opened in batches, so the listen backlog is never the limit tested
  for (let i = 0; i < n; i += 200) {
    const batch = await Promise.allSettled(Array.from({ length: Math.min(200, n - i) }, async () => {
      const s = await open();
      s.on('error', () => {});
      sockets.push(s);
      await exchange(s, false);
    }));
    for (const b of batch) if (b.status === 'rejected') fail(b.reason?.message);
  }
  // all N open at once now; each asks again on its kept connection
  const again = await Promise.allSettled(sockets.map((s) => exchange(s, false)));
  for (const b of again) if (b.status === 'rejected') fail(b.reason?.message);
  console.log(JSON.stringify({ held: sockets.length, ...counts }));
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((r) => rl.once('line', r));
  for (const s of sockets) s.destroy();
  rl.close();
}

async function short() {
  for (let i = 0; i < n; i++) {
    try {
      const s = await open();
      s.on('error', () => {});
      await exchange(s, true);
      s.end();
    } catch (e) { fail(e.message); }
  }
  console.log(JSON.stringify(counts));
}

// Read the first bytes of a big response, then reset the connection.
function abortOne() {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => s.write(`GET ${pathArg} HTTP/1.1\r\nHost: x\r\n\r\n`));
    s.once('data', (d) => {
      if (/^HTTP\/1\.1 200 /.test(d.toString('latin1'))) counts.ok++;
      else fail(d.toString('latin1').slice(0, 200));
      s.resetAndDestroy();
      resolve();
    });
    s.on('error', (e) => { fail(e.message); resolve(); });
  });
}

async function abort() {
  for (let i = 0; i < n; i += 50)
    await Promise.all(Array.from({ length: Math.min(50, n - i) }, abortOne));
  console.log(JSON.stringify(counts));
}

await ({ keepalive, short, abort })[mode]();
