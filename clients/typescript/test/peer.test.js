// The client against a scripted server, for what a real gateway cannot be
// made to do on demand: protocol violations, silence, scripted close
// reasons and reconnects.
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { Client, Connection, CloseReasonError, RpcError } from '../src/index.js';
import { fakeServer, nextEvent, test } from './helpers.js';

/**
 * Connects a client to a fake server whose first connection runs script.
 * @param {import('node:test').TestContext} t
 * @param {(peer: import('./helpers.js').FakePeer) => any} script
 * @param {import('../index.js').ClientOptions} [options]
 */
async function scripted(t, script, options = {}) {
  const srv = await fakeServer(t, async (peer) => {
    await peer.initialize();
    await script(peer);
  });
  const client = new Client({ host: srv.host, port: srv.port, keepalive: false, ...options });
  t.after(() => client.close());
  await client.connect();
  return client;
}

/** Frames a body given as text, whatever it holds. */
const rawFrame = (body) => `${Buffer.byteLength(body).toString(16).padStart(8, '0')}:${body}\n`;

/**
 * Asserts that the client aborted with stringCode and told the server so.
 * @param {() => Promise<any>} peerClose the server's next message, once the abort happened
 */
async function assertAborted(client, pending, peerClose, stringCode) {
  await assert.rejects(pending, (err) => {
    assert.ok(err instanceof CloseReasonError, String(err));
    assert.equal(err.remote, false);
    assert.equal(err.stringCode, stringCode);
    return true;
  });
  const sent = await peerClose();
  assert.equal(sent.method, '_CloseReason');
  assert.equal(sent.params.error.data.string_code, stringCode);
  assert.equal(client.state, 'closed');
}

for (const [name, wire, code] of [
  ['invalid JSON', '00000005:{"a":\n', 'JSONRPC_PARSE_ERROR'],
  ['invalid UTF-8', Buffer.concat([Buffer.from('00000004:"'), Buffer.from([0xc3, 0x28]), Buffer.from('"\n')]), 'JSONRPC_PARSE_ERROR'],
  ['a bad frame header', '0000000g:{"a":"b!"}\n', 'JSONRPC_PARSE_ERROR'],
  ['a missing newline', '00000002:{}X', 'JSONRPC_PARSE_ERROR'],
  ['an over-size header', '7fffffff:{', 'JSONRPC_PARSE_ERROR'],
  ['an empty body', rawFrame(''), 'JSONRPC_PARSE_ERROR'],
  ['a batch', rawFrame('[]'), 'JSONRPC_INVALID_REQUEST'],
  ['a numeric response id', rawFrame('{"jsonrpc":"2.0","id":1,"result":{}}'), 'JSONRPC_INVALID_REQUEST'],
  ['an answer to an unknown id', rawFrame('{"jsonrpc":"2.0","id":"zz-9","result":{}}'), 'JSONRPC_INVALID_REQUEST'],
  ['a result that is no object', rawFrame('{"jsonrpc":"2.0","id":"ts-2","result":[]}'), 'JSONRPC_INVALID_REQUEST'],
  ['a request with array params', rawFrame('{"jsonrpc":"2.0","id":"gw-1","method":"X","params":[]}'), 'JSONRPC_INVALID_REQUEST'],
  ['a request with a numeric id', rawFrame('{"jsonrpc":"2.0","id":7,"method":"_Keepalive","params":{}}'), 'JSONRPC_INVALID_REQUEST'],
  ['jsonrpc 1.0', rawFrame('{"jsonrpc":"1.0","method":"_Info","params":{}}'), 'JSONRPC_INVALID_REQUEST'],
  ['a message of no kind', rawFrame('{"jsonrpc":"2.0"}'), 'JSONRPC_INVALID_REQUEST'],
]) {
  test(`the client aborts on ${name}`, async (t) => {
    let peerClose;
    const client = await scripted(t, async (peer) => {
      await peer.next(); // the call below
      peerClose = peer.next();
      peer.socket.write(wire);
    });
    const pending = client.listSkills();
    const closed = nextEvent(client, 'close');
    await assertAborted(client, pending, () => peerClose, code);
    const [reason] = await closed;
    assert.equal(reason.stringCode, code);
  });
}

test('an error response with a non-integer code is a protocol violation', async (t) => {
  let peerClose;
  const client = await scripted(t, async (peer) => {
    const req = await peer.next();
    peerClose = peer.next();
    peer.send({ jsonrpc: '2.0', id: req.id, error: { code: 1.5, message: 'x' } });
  });
  const pending = client.listSkills();
  await assertAborted(client, pending, () => peerClose, 'JSONRPC_INVALID_REQUEST');
});

test('error responses: data fields, a missing string_code mapped from the code, retry hints', async (t) => {
  const client = await scripted(t, async (peer) => {
    for (;;) {
      const req = await peer.next();
      if (req.method === 'a') {
        peer.send({ jsonrpc: '2.0', id: req.id, error: { code: -32602, message: 'bad' } });
      } else if (req.method === 'b') {
        peer.send({ jsonrpc: '2.0', id: req.id, error: { code: 7, message: 'm' } });
      } else {
        peer.send({ jsonrpc: '2.0', id: req.id, error: { code: 1, message: 'Too high.', data: {
          string_code: 'AMOUNT_TOO_HIGH', details: 'file.c:123', limit: 1000,
          retry: { suggested_delay_ms: 50, max_attempts: 3 } } } });
      }
    }
  });
  await assert.rejects(client.call('a'), { stringCode: 'JSONRPC_INVALID_PARAMS', code: -32602 });
  await assert.rejects(client.call('b'), { stringCode: 'UNKNOWN', code: 7 });
  await assert.rejects(client.call('c'), (err) => {
    assert.ok(err instanceof RpcError);
    assert.equal(err.stringCode, 'AMOUNT_TOO_HIGH');
    assert.equal(err.details, 'file.c:123');
    assert.equal(err.data.limit, 1000);
    assert.deepEqual(err.retry, { suggestedDelayMs: 50, maxAttempts: 3 });
    assert.equal(err.retryable, true);
    assert.equal(err.serverMessage, 'Too high.');
    return true;
  });
});

test('server requests: _Keepalive is answered, other methods get -32601', async (t) => {
  const answers = [];
  const client = await scripted(t, async (peer) => {
    const req = await peer.next();
    peer.send({ jsonrpc: '2.0', id: 'gw-1', method: '_Keepalive', params: {} });
    peer.send({ jsonrpc: '2.0', id: 'gw-2', method: 'Anything', params: {} });
    answers.push(await peer.next(), await peer.next());
    peer.send({ jsonrpc: '2.0', id: req.id, result: { done: true } });
  });
  const keepalive = nextEvent(client, 'keepalive');
  assert.deepEqual(await client.call('sync'), { done: true });
  await keepalive;
  assert.deepEqual(answers[0], { jsonrpc: '2.0', result: {}, id: 'gw-1' });
  assert.equal(answers[1].id, 'gw-2');
  assert.equal(answers[1].error.code, -32601);
});

test('_Info, _Error and other notifications are events, not errors', async (t) => {
  const client = await scripted(t, async (peer) => {
    const req = await peer.next();
    peer.send({ jsonrpc: '2.0', method: '_Info', params: { message: 'hello' } });
    peer.send({ jsonrpc: '2.0', method: '_Error', params: { id: req.id, method: 'x', error: { code: 1, message: 'odd', data: { string_code: 'ODD' } } } });
    peer.send({ jsonrpc: '2.0', method: '_Error', params: 'not an object' });
    peer.send({ jsonrpc: '2.0', method: 'run_event', params: { run_id: 'r1' } });
    peer.send({ jsonrpc: '2.0', id: req.id, result: {} });
  });
  const info = nextEvent(client, 'info');
  const errors = [];
  client.on('serverError', (e) => errors.push(e));
  const note = nextEvent(client, 'notification');
  await client.call('go');
  assert.deepEqual((await info)[0], { message: 'hello' });
  assert.deepEqual(await note, ['run_event', { run_id: 'r1' }]);
  assert.equal(errors.length, 2);
  assert.ok(errors[0] instanceof RpcError);
  assert.equal(errors[0].stringCode, 'ODD');
  assert.equal(errors[1], 'not an object');
  assert.equal(client.state, 'ready');
});

test('a _CloseReason becomes the error of pending calls and of the close event', async (t) => {
  const client = await scripted(t, async (peer) => {
    await peer.next();
    peer.send({ jsonrpc: '2.0', method: '_CloseReason', params: { error: { code: 1, message: 'Bye.', data: {
      string_code: 'SERVER_SHUTDOWN', retry: { suggested_delay_ms: 1000, max_attempts: 3 } } } } });
    peer.socket.end();
  });
  const closed = nextEvent(client, 'close');
  await assert.rejects(client.listSkills(), (err) => {
    assert.ok(err instanceof CloseReasonError);
    assert.equal(err.remote, true);
    assert.equal(err.stringCode, 'SERVER_SHUTDOWN');
    assert.deepEqual(err.retry, { suggestedDelayMs: 1000, maxAttempts: 3 });
    return true;
  });
  assert.equal((await closed)[0].stringCode, 'SERVER_SHUTDOWN');
  await assert.rejects(client.listSkills(), { stringCode: 'SERVER_SHUTDOWN' });
});

test('a malformed _CloseReason is ignored; the close is reported without it', async (t) => {
  const client = await scripted(t, async (peer) => {
    await peer.next();
    peer.send({ jsonrpc: '2.0', method: '_CloseReason', params: 'going' });
    peer.send({ jsonrpc: '2.0', method: '_CloseReason', params: { error: { code: 'x', message: 1 } } });
    peer.socket.end();
  });
  await assert.rejects(client.listSkills(), (err) => {
    assert.equal(err.stringCode, 'CONNECTION_CLOSED');
    assert.match(err.message, /closed by the server/);
    return true;
  });
});

test('a server keepalive before Initialize is answered is answered', async (t) => {
  let answer;
  const srv = await fakeServer(t, async (peer) => {
    const init = await peer.next();
    peer.send({ jsonrpc: '2.0', id: 'gw-1', method: '_Keepalive', params: {} });
    answer = await peer.next();
    peer.send({ jsonrpc: '2.0', id: init.id, result: { protocol_version: '1.0', max_message_size: 1 << 20 } });
  });
  const client = new Client({ ...srv, keepalive: false });
  t.after(() => client.close());
  await client.connect();
  assert.deepEqual(answer, { jsonrpc: '2.0', result: {}, id: 'gw-1' });
});

test('a silent server is detected by the client keepalive', async (t) => {
  let sawCloseReason;
  const closeReason = new Promise((resolve) => { sawCloseReason = resolve; });
  const srv = await fakeServer(t, async (peer) => {
    await peer.initialize();
    const probe = await peer.next(); // never answered
    assert.equal(probe.method, '_Keepalive');
    sawCloseReason(await peer.next());
  });
  const client = new Client({ ...srv, keepalive: { intervalMs: 20, timeoutMs: 50 } });
  t.after(() => client.close());
  await client.connect();
  const [reason] = await nextEvent(client, 'close');
  assert.ok(reason instanceof CloseReasonError);
  assert.equal(reason.stringCode, 'KEEPALIVE');
  assert.equal(reason.code, -32000);
  assert.equal(reason.remote, false);
  const sent = await closeReason;
  assert.equal(sent.method, '_CloseReason');
  assert.equal(sent.params.error.code, -32000);
  assert.equal(sent.params.error.data.string_code, 'KEEPALIVE');
});

test('a server that trickles a frame without finishing it is detected', async (t) => {
  let trickle;
  t.after(() => clearInterval(trickle));
  const srv = await fakeServer(t, async (peer) => {
    await peer.initialize();
    peer.socket.setNoDelay(true); // every byte must leave at once, not wait for an ACK
    peer.socket.write('00100000:{"jsonrpc":'); // 1 MiB declared: never finished here
    trickle = setInterval(() => peer.socket.write(' '), 2);
  });
  const client = new Client({ ...srv, keepalive: { intervalMs: 200, timeoutMs: 200 } });
  t.after(() => client.close());
  const closed = nextEvent(client, 'close');
  await client.connect();
  const [reason] = await closed;
  assert.equal(reason.stringCode, 'KEEPALIVE');
});

test('an answered client keepalive keeps the connection', async (t) => {
  const srv = await fakeServer(t, async (peer) => {
    await peer.initialize();
    for (let probes = 1; ; probes++) {
      const msg = await peer.next();
      assert.equal(msg.method, '_Keepalive');
      peer.send({ jsonrpc: '2.0', id: msg.id, result: {} });
      if (probes === 3) peer.send({ jsonrpc: '2.0', method: '_Info', params: { probes } });
    }
  });
  const client = new Client({ ...srv, keepalive: { intervalMs: 10, timeoutMs: 60_000 } });
  t.after(() => client.close());
  const info = nextEvent(client, 'info');
  await client.connect();
  assert.deepEqual((await info)[0], { probes: 3 });
  assert.equal(client.state, 'ready');
});

test('calls made while connecting are pipelined behind Initialize with pipeline: true', async (t) => {
  const before = [];
  const srv = await fakeServer(t, async (peer) => {
    // Answer Initialize only once both calls have arrived behind it.
    const [init, ...calls] = [await peer.next(), await peer.next(), await peer.next()];
    before.push(init.method, ...calls.map((c) => c.method));
    peer.send({ jsonrpc: '2.0', id: init.id, result: { protocol_version: '1.0', max_message_size: 1 << 20 } });
    for (const req of calls) peer.send({ jsonrpc: '2.0', id: req.id, result: { method: req.method } });
  });
  const client = new Client({ ...srv, keepalive: false, pipeline: true });
  t.after(() => client.close());
  const init = client.connect();
  const calls = [client.call('first'), client.call('second')];
  await init;
  assert.deepEqual(await Promise.all(calls), [{ method: 'first' }, { method: 'second' }]);
  assert.deepEqual(before, ['Initialize', 'first', 'second']);
});

test('frames queued before the socket is up leave in one write, Initialize first', async () => {
  const writes = [];
  const socket = new Duplex({
    read() {},
    write(chunk, _enc, cb) {
      writes.push(Buffer.from(chunk));
      cb();
    },
  });
  const conn = new Connection(/** @type {any} */ (socket), { idPrefix: 't' });
  const calls = [conn.request('Initialize', {}), conn.request('a', {}), conn.request('b', { x: 'ä' })];
  await new Promise((r) => setImmediate(r));
  assert.equal(writes.length, 0, 'nothing is written before start()');
  conn.start();
  assert.equal(writes.length, 1);
  const text = writes[0].toString();
  assert.deepEqual([...text.matchAll(/"method":"(\w+)"/g)].map((m) => m[1]), ['Initialize', 'a', 'b']);
  conn.destroy(new Error('done'));
  for (const c of calls) await assert.rejects(c, /done/);
});

test('reconnect follows the close reason\'s retry hint', async (t) => {
  let connections = 0;
  const srv = await fakeServer(t, async (peer) => {
    connections++;
    await peer.initialize({ session_id: `s-${connections}` });
    if (connections === 1) {
      await peer.next();
      peer.send({ jsonrpc: '2.0', method: '_CloseReason', params: { error: { code: 1, message: 'Bye.', data: {
        string_code: 'SERVER_SHUTDOWN', retry: { suggested_delay_ms: 5, max_attempts: 2 } } } } });
      peer.socket.end();
      return;
    }
    for (;;) {
      const req = await peer.next();
      peer.send({ jsonrpc: '2.0', id: req.id, result: { on: connections } });
    }
  });
  const client = new Client({ ...srv, keepalive: false, reconnect: { maxAttempts: 5, initialDelayMs: 60_000 } });
  t.after(() => client.close());
  await client.connect();
  const reconnecting = nextEvent(client, 'reconnecting');
  const reconnected = nextEvent(client, 'reconnect');
  await assert.rejects(client.call('dropped'), { stringCode: 'SERVER_SHUTDOWN' });
  const [ev] = await reconnecting;
  assert.equal(ev.attempt, 1);
  assert.ok(ev.delayMs >= 5 && ev.delayMs <= 6, `the hinted delay and its spread, not the configured one: ${ev.delayMs}`);
  assert.equal(ev.error.stringCode, 'SERVER_SHUTDOWN');
  const [result] = await reconnected;
  assert.equal(result.session_id, 's-2');
  assert.equal(client.session.session_id, 's-2');
  assert.deepEqual(await client.call('after'), { on: 2 });
});

test('reconnect gives up after the attempts the hint allows', async (t) => {
  let connections = 0;
  const srv = await fakeServer(t, async (peer) => {
    connections++;
    if (connections > 1) {
      peer.socket.destroy(); // every reconnect fails
      return;
    }
    await peer.initialize();
    await peer.next();
    peer.send({ jsonrpc: '2.0', method: '_CloseReason', params: { error: { code: 1, message: 'Busy.', data: {
      string_code: 'OVERLOADED', retry: { suggested_delay_ms: 1, max_attempts: 2 } } } } });
    peer.socket.end();
  });
  const client = new Client({ ...srv, keepalive: false, reconnect: { maxAttempts: 10 } });
  t.after(() => client.close());
  await client.connect();
  const attempts = [];
  client.on('reconnecting', (ev) => attempts.push(ev.attempt));
  const closed = nextEvent(client, 'close');
  await assert.rejects(client.call('x'), { stringCode: 'OVERLOADED' });
  const waiting = client.call('queued while reconnecting');
  const [reason] = await closed;
  assert.deepEqual(attempts, [1, 2]);
  assert.equal(connections, 3);
  assert.equal(reason.stringCode, 'CONNECTION_CLOSED');
  await assert.rejects(waiting, { stringCode: 'CONNECTION_CLOSED' });
  assert.equal(client.state, 'closed');
});

test('reconnect stops at a refusal that has no retry hint', async (t) => {
  let connections = 0;
  const srv = await fakeServer(t, async (peer) => {
    connections++;
    const init = await peer.next();
    if (connections > 1) {
      peer.send({ jsonrpc: '2.0', id: init.id, error: { code: 1, message: 'No.', data: { string_code: 'AUTH_REQUIRED' } } });
      return;
    }
    peer.send({ jsonrpc: '2.0', id: init.id, result: { protocol_version: '1.0', max_message_size: 1 << 20 } });
    peer.socket.destroy();
  });
  const client = new Client({ ...srv, keepalive: false, reconnect: { maxAttempts: 10, initialDelayMs: 1 } });
  t.after(() => client.close());
  const closed = nextEvent(client, 'close');
  await client.connect();
  const [reason] = await closed;
  assert.equal(reason.stringCode, 'AUTH_REQUIRED');
  assert.equal(connections, 2);
});

test('close() during a reconnect delay stops it', async (t) => {
  const srv = await fakeServer(t, async (peer) => {
    await peer.initialize();
    peer.socket.destroy();
  });
  const client = new Client({ ...srv, keepalive: false, reconnect: { initialDelayMs: 60_000, maxDelayMs: 60_000 } });
  const reconnecting = nextEvent(client, 'reconnecting');
  await client.connect();
  await reconnecting;
  const waiting = client.call('x');
  await client.close();
  await assert.rejects(waiting, { stringCode: 'CONNECTION_CLOSED' });
  assert.equal(client.state, 'closed');
});

test('options are checked', () => {
  assert.throws(() => new Client({ port: 0 }), RangeError);
  assert.throws(() => new Client({ port: '7400' }), RangeError);
  assert.throws(() => new Client({ port: 70000 }), RangeError);
  assert.throws(() => new Client({ host: '' }), TypeError);
  assert.throws(() => new Client({ maxMessageSize: 0 }), RangeError);
  assert.throws(() => new Client({ maxMessageSize: 2 ** 32 }), RangeError);
  assert.throws(() => new Client({ keepalive: { timeoutMs: 0 } }), /keepalive.timeoutMs/);
  assert.throws(() => new Client({ keepalive: { intervalMs: -5 } }), /keepalive.intervalMs/);
  assert.throws(() => new Client({ connectTimeoutMs: Infinity }), /connectTimeoutMs/);
  assert.throws(() => new Client(null), TypeError);
  assert.doesNotThrow(() => new Client({ port: 1, keepalive: false, maxMessageSize: 16384 }));
});

test('reconnect options are checked', () => {
  assert.throws(() => new Client({ reconnect: { maxAttempts: -1 } }), RangeError);
  assert.throws(() => new Client({ reconnect: { initialDelayMs: Number.NaN } }), RangeError);
});
