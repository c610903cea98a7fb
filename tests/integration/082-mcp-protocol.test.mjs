// 082: `wtproxy mcp` speaks MCP over stdio byte for byte: the handshake
// (initialize with a version it speaks and one it does not, the
// initialized notification, ping), tools/list, requests before initialize,
// EOF ending it with 0; and every kind of bad input (malformed JSON, not an
// object, no or a wrong "jsonrpc", a batch, an unknown method, an unknown
// tool, arguments of the wrong type or range, invalid UTF-8, a 10 MiB
// line) gets its JSON-RPC error, after which a tools/list is still
// answered. Nothing but JSON-RPC lines ever reaches stdout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { startMcp, initialize } from './lib/mcp.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const version = execFileSync(wtproxyBin, ['--version']).toString().trim().split(' ')[1];
// No daemon: these tests need none, and must reach none.
const env = { WTPROXY_CONTROL: `${os.tmpdir()}/wtproxy-082-none.sock`, WTPROXY_NO_AUTOSTART: '1' };
const toolNames = ['servers', 'why', 'refusals', 'logs', 'restart', 'claim', 'release'];

const rpcError = (id, code, message, data) => JSON.stringify({
  jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) },
});

// After a bad input: the server still answers a valid request.
async function stillServes(mcp, id) {
  const r = await mcp.request(id, 'tools/list');
  assert.equal(r.id, id);
  assert.deepEqual(r.result.tools.map((x) => x.name), toolNames);
}

test('initialize, initialized, ping, tools/list, and EOF exits 0', async (t) => {
  const mcp = startMcp(t, { cwd: os.tmpdir(), env });
  await mcp.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n');
  const init = JSON.parse(await mcp.line());
  assert.deepEqual(Object.keys(init), ['jsonrpc', 'id', 'result']);
  assert.equal(init.id, 1);
  assert.equal(init.result.protocolVersion, '2025-06-18');
  assert.deepEqual(init.result.capabilities, { tools: {} });
  assert.deepEqual(init.result.serverInfo, { name: 'wtproxy', title: 'wtproxy', version });
  assert.match(init.result.instructions, /worktree/);
  // A notification is never answered: the next line is the ping's.
  await mcp.send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  await mcp.send('{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}\n');
  await mcp.send('{"jsonrpc":"2.0","id":"p-1","method":"ping"}\n');
  assert.equal(await mcp.line(), '{"jsonrpc":"2.0","id":"p-1","result":{}}');
  // A response (we never asked anything) is ignored too.
  await mcp.send('{"jsonrpc":"2.0","id":77,"result":{}}\r\n\n   \n');
  await mcp.send('{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}\n');
  assert.equal(await mcp.line(), '{"jsonrpc":"2.0","id":2,"result":{}}');

  const list = await mcp.request(3, 'tools/list');
  assert.deepEqual(list.result.tools.map((x) => x.name), toolNames);
  for (const tool of list.result.tools) {
    assert.equal(typeof tool.description, 'string');
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
    assert.equal(tool.annotations.readOnlyHint, ['servers', 'why', 'refusals', 'logs'].includes(tool.name));
  }
  const claim = list.result.tools.find((x) => x.name === 'claim');
  assert.deepEqual(claim.inputSchema.required, ['resource']);
  assert.equal(claim.inputSchema.properties.resource.type, 'string');

  // The last message may lack its newline; EOF then ends the session.
  await mcp.send('{"jsonrpc":"2.0","id":4,"method":"ping"}');
  const end = await mcp.end();
  assert.equal(mcp.lines.shift(), '{"jsonrpc":"2.0","id":4,"result":{}}');
  assert.equal(end.code, 0, mcp.stderr());
  assert.equal(end.rest, '', 'stdout ends with a whole line');
  assert.doesNotMatch(mcp.stderr(), /Sanitizer|runtime error/);
});

test('a version it does not speak gets its newest; requests before initialize are answered', async (t) => {
  const mcp = startMcp(t, { cwd: os.tmpdir(), env });
  // Before any initialize (the stateless revision has none): answered.
  await stillServes(mcp, 'before');
  const init = await initialize(mcp, '2099-01-01');
  assert.equal(init.result.protocolVersion, '2025-11-25');
  const old = await mcp.request(5, 'initialize', { protocolVersion: '2024-11-05', capabilities: {} });
  assert.equal(old.result.protocolVersion, '2024-11-05');
  await mcp.send('{"jsonrpc":"2.0","id":6,"method":"initialize","params":{}}\n');
  assert.equal(await mcp.line(), rpcError(6, -32602, 'Invalid params',
    'initialize needs params.protocolVersion, a string such as "2025-06-18"'));
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('bad input: each gets its JSON-RPC error and the server keeps serving', async (t) => {
  const mcp = startMcp(t, { cwd: os.tmpdir(), env });
  await initialize(mcp);
  const cases = [
    // [bytes sent, the exact reply line]
    ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', rpcError(null, -32600, 'Invalid Request',
      'a batch (an array) is not accepted: MCP 2025-06-18 removed JSON-RPC batching; send one message a line')],
    ['"hello"', rpcError(null, -32600, 'Invalid Request', 'a message is a JSON object')],
    ['42', rpcError(null, -32600, 'Invalid Request', 'a message is a JSON object')],
    ['{"id":2,"method":"ping"}', rpcError(2, -32600, 'Invalid Request', '"jsonrpc" must be "2.0"')],
    ['{"jsonrpc":"1.0","id":3,"method":"ping"}', rpcError(3, -32600, 'Invalid Request', '"jsonrpc" must be "2.0"')],
    ['{"jsonrpc":2,"id":"x","method":"ping"}', rpcError('x', -32600, 'Invalid Request', '"jsonrpc" must be "2.0"')],
    ['{"jsonrpc":"2.0","id":{},"method":"ping"}', rpcError(null, -32600, 'Invalid Request', '"id" must be a string or a number')],
    ['{"jsonrpc":"2.0","id":null,"method":"ping"}', rpcError(null, -32600, 'Invalid Request', '"id" must be a string or a number')],
    ['{"jsonrpc":"2.0","id":4,"method":7}', rpcError(4, -32600, 'Invalid Request', '"method" must be a string')],
    ['{"jsonrpc":"2.0","id":5}', rpcError(5, -32600, 'Invalid Request', '"method" must be a string')],
    ['{"jsonrpc":"2.0","id":6,"method":"resources/list"}', rpcError(6, -32601, 'Method not found',
      'no method "resources/list": wtproxy mcp answers initialize, ping, tools/list and tools/call')],
    ['{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1]}', rpcError(7, -32602, 'Invalid params', '"params" must be an object')],
    ['{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"format-disk"}}',
      rpcError(8, -32602, 'Invalid params', 'no tool "format-disk" (see tools/list)')],
    ['{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}',
      rpcError(9, -32602, 'Invalid params', 'tools/call needs params.name, a string (see tools/list)')],
    ['{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"servers","arguments":"all"}}',
      rpcError(10, -32602, 'Invalid params', 'params.arguments must be an object')],
    ['{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"logs","arguments":{"lines":"ten"}}}',
      rpcError(11, -32602, 'Invalid params', 'logs: "lines" must be an integer from 1 to 1000')],
    ['{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"logs","arguments":{"lines":5000}}}',
      rpcError(12, -32602, 'Invalid params', 'logs: "lines" must be an integer from 1 to 1000')],
    ['{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"logs","arguments":{"lines":2.5}}}',
      rpcError(13, -32602, 'Invalid params', 'logs: "lines" must be an integer from 1 to 1000')],
    ['{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"why","arguments":{"pid":"1"}}}',
      rpcError(14, -32602, 'Invalid params', 'why: "pid" must be an integer from 1 to 2147483647')],
    ['{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"servers","arguments":{"worktree":7}}}',
      rpcError(15, -32602, 'Invalid params', 'servers: "worktree" must be a string')],
    ['{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"servers","arguments":{"all":true}}}',
      rpcError(16, -32602, 'Invalid params', 'servers takes no argument "all" (see its inputSchema)')],
    ['{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"claim","arguments":{"ttl":"1h"}}}',
      rpcError(17, -32602, 'Invalid params', 'claim needs "resource"')],
    ['{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"restart","arguments":{"front":0}}}',
      rpcError(18, -32602, 'Invalid params', 'restart: "front" must be an integer from 1 to 65535')],
    ['{"jsonrpc":"2.0","id":19,"method":"ping","ping":1,"ping":2}', null], // duplicate keys: not JSON we accept
    ['{"jsonrpc":"2.0","id":20,"method":', null],
    ['{"jsonrpc":"2.0","id":21,"method":"\xff\xfe"}', null], // invalid UTF-8
  ];
  let id = 100;
  for (const [bytes, expected] of cases) {
    await mcp.send(Buffer.concat([Buffer.from(bytes, 'latin1'), Buffer.from('\n')]));
    const got = await mcp.line();
    if (expected) assert.equal(got, expected, `reply to ${bytes}`);
    else assert.match(got, /^\{"jsonrpc":"2\.0","id":null,"error":\{"code":-32700,"message":"Parse error","data":"not JSON: (?:[^"\\]|\\.)*"\}\}$/, `reply to ${bytes}`);
    await stillServes(mcp, id++);
  }

  // A 10 MiB line: refused once, whole, and forgotten; a request sent
  // right behind it in the same write is answered.
  const huge = Buffer.alloc(10 * 1024 * 1024, 'x');
  await mcp.send(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","pad":"'), huge,
    Buffer.from('"}\n{"jsonrpc":"2.0","id":"after","method":"ping"}\n')]));
  assert.equal(await mcp.line(), rpcError(null, -32600, 'Invalid Request',
    'a message is at most 1048576 bytes; this one was discarded'));
  assert.equal(await mcp.line(), '{"jsonrpc":"2.0","id":"after","result":{}}');
  // Exactly the limit is still a message (the padding makes it 1 MiB).
  const head = '{"jsonrpc":"2.0","id":"limit","method":"ping","pad":"';
  const pad = 'y'.repeat(1024 * 1024 - head.length - 2);
  await mcp.send(`${head}${pad}"}\n`);
  assert.equal(await mcp.line(), '{"jsonrpc":"2.0","id":"limit","result":{}}');
  await stillServes(mcp, 'last');

  const end = await mcp.end();
  assert.equal(end.code, 0, mcp.stderr());
  assert.equal(mcp.lines.length, 0, `unexpected replies: ${mcp.lines.join('\n')}`);
  assert.doesNotMatch(mcp.stderr(), /Sanitizer|runtime error/);
});

test('a huge message at EOF, without its newline, is still answered before the exit', async (t) => {
  const mcp = startMcp(t, { cwd: os.tmpdir(), env });
  await mcp.send(Buffer.alloc(3 * 1024 * 1024, '{'));
  const end = await mcp.end();
  assert.equal(end.code, 0, mcp.stderr());
  assert.equal(mcp.lines.shift(), rpcError(null, -32600, 'Invalid Request',
    'a message is at most 1048576 bytes; this one was discarded'));
});
