// The client against the real gateway: Initialize, the eight methods, blobs,
// runs, concurrency, errors, size limits and pipelining. One gateway serves
// every test of this file.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  Client,
  connect,
  ConnectError,
  CloseReasonError,
  encodeFrame,
  FrameParser,
  FrameTooLargeError,
  RpcError,
  SkillgateError,
  VERSION,
} from '../src/index.js';
import { startGateway, tempDir, test, PATIENCE_MS } from './helpers.js';

const run = promisify(execFile);

/** @type {import('./helpers.js').Gateway} */
let gw;
/** @type {Client} */
let client;

/** Cleanups of the file-wide gateway, run by the after hook in reverse. */
const cleanups = [];

before(async () => {
  gw = await startGateway({ after: (fn) => cleanups.push(fn) });
  client = await connect({ ...gw.address(), clientInfo: { name: 'ts-tests', version: '1' } });
});

after(async () => {
  await client?.close();
  for (const fn of cleanups.reverse()) await fn();
});

test('Initialize returns the session parameters', async () => {
  const s = client.session;
  assert.equal(s.protocol_version, '1.0');
  assert.match(s.session_id, /^s-/);
  assert.equal(s.max_message_size, 1 << 20);
  assert.equal(typeof s.keepalive_interval_ms, 'number');
  assert.equal(client.state, 'ready');
  const rec = await gw.waitForLog((r) => r.message === 'session initialized' && r.session_id === s.session_id);
  assert.equal(rec.client, 'ts-tests');
});

test('the default client name and version are sent', async (t) => {
  const c = await connect(gw.address());
  t.after(() => c.close());
  const rec = await gw.waitForLog((r) => r.message === 'session initialized' && r.session_id === c.session.session_id);
  assert.equal(rec.client, 'skillgate-typescript');
  assert.equal(rec.client_version, VERSION);
});

test('list_skills', async () => {
  const res = await client.listSkills({ detail: 'summary' });
  const names = res.skills.map((s) => s.name);
  assert.ok(names.includes('acme.math.add'));
  assert.ok(names.includes('skills.protocol.guide'));
  assert.equal(res.next_cursor, null);
  const add = res.skills.find((s) => s.name === 'acme.math.add');
  assert.equal(add.version, '1.1.0');
  assert.equal(add.kind, 'action');
});

test('list_skills pages with a cursor', async () => {
  const first = await client.listSkills({ limit: 2 });
  assert.equal(first.skills.length, 2);
  assert.equal(typeof first.next_cursor, 'string');
  const second = await client.listSkills({ limit: 2, cursor: first.next_cursor });
  assert.notDeepEqual(second.skills, first.skills);
});

test('describe_skill', async () => {
  const { skill } = await client.describeSkill({ name: 'acme.math.add', version: '1.0.0', detail: 'full' });
  assert.equal(skill.version, '1.0.0');
  assert.equal(skill.manifest.runtime.entrypoint, 'code/main.py');
  assert.deepEqual([...skill.versions].sort(), ['1.0.0', '1.1.0']);
  assert.ok(skill.files.some((f) => f.path === 'code/main.py'));
});

test('read_skill_file', async () => {
  const file = await client.readSkillFile({ name: 'acme.math.add', path: 'code/main.py' });
  assert.equal(file.encoding, 'utf-8');
  assert.match(file.content, /def main\(args\)/);
  assert.equal(file.truncated, false);
  const part = await client.readSkillFile({ name: 'acme.math.add', path: 'code/main.py', max_bytes: 5 });
  assert.equal(part.content.length, 5);
  assert.equal(part.truncated, true);
  assert.equal(part.next_offset, 5);
});

test('load_skills_protocol_guide', async () => {
  const guide = await client.loadSkillsProtocolGuide();
  assert.ok(guide.content.length > 100);
});

test('execute_skill', async () => {
  const run = await client.executeSkill({ name: 'acme.math.add', args: { a: 2, b: 40 } }, { timeoutMs: PATIENCE_MS });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.deepEqual(run.output, { sum: 42, count: 2 });
});

test('a failing run is a result with status failed, not an error', async () => {
  const run = await client.executeSkill({ name: 'acme.math.add', args: { a: 'x', b: 1 } }, { timeoutMs: PATIENCE_MS });
  assert.equal(run.status, 'failed');
  assert.equal(run.error.type, 'TypeError');
});

test('run_code with a mounted skill', async () => {
  const code = 'from skills.acme.math.add.code.ops import add\n\ndef main(args):\n    return {"v": add(args["x"], 1), "s": "ä"}\n';
  const run = await client.runCode({ code, args: { x: 41 }, mount_skills: ['acme.math.add'] }, { timeoutMs: PATIENCE_MS });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.deepEqual(run.output, { v: 42, s: 'ä' });
  assert.match(run.run_id, /^run_/);
});

test('blob round trip: text, bytes, and a run that reads and writes blobs', async () => {
  const text = 'one two two three three three\nÄäö 😀\n';
  const created = await client.createBlob({ content: text, kind: 'text/plain' });
  assert.match(created.blob_id, /^blob:/);
  assert.equal(created.size_bytes, Buffer.byteLength(text));
  const read = await client.readBlob({ blob_id: created.blob_id, mode: 'full' });
  assert.equal(read.content, text);
  assert.equal(read.truncated, false);

  const bytes = Buffer.from([0, 1, 2, 250, 251, 255]);
  const bin = await client.createBlob({ content: bytes });
  assert.equal(bin.kind, 'application/octet-stream');
  const back = await client.readBlob({ blob_id: bin.blob_id, mode: 'full' });
  assert.equal(back.encoding, 'base64');
  assert.deepEqual(Buffer.from(back.content, 'base64'), bytes);

  const run = await client.executeSkill(
    { name: 'acme.text.wordcount', args: { text_blob: created.blob_id, top: 2 }, input_blobs: [created.blob_id] },
    { timeoutMs: PATIENCE_MS },
  );
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(run.output.words, 7); // the emoji is no word
  const top = await client.readBlob({ blob_id: run.output.top_words_blob, mode: 'full' });
  assert.deepEqual(JSON.parse(top.content).top, [{ word: 'three', count: 3 }, { word: 'two', count: 2 }]);
});

test('concurrent calls each get their own answer', async () => {
  const names = ['acme.math.add', 'acme.style.guide', 'acme.text.wordcount', 'pdf-tips'];
  const calls = [];
  for (let i = 0; i < 40; i++) {
    const name = names[i % names.length];
    calls.push(client.describeSkill({ name }).then((r) => [name, r.skill.name]));
  }
  calls.push(client.runCode({ code: 'def main(args):\n    return {"n": args["n"]}\n', args: { n: 7 } }, { timeoutMs: PATIENCE_MS })
    .then((r) => ['run', r.output.n]));
  for (const [want, got] of await Promise.all(calls)) {
    if (want === 'run') assert.equal(got, 7);
    else assert.equal(got, want);
  }
});

test('an unknown skill rejects with SKILL_NOT_FOUND', async () => {
  await assert.rejects(client.describeSkill({ name: 'acme.no.such' }), (err) => {
    assert.ok(err instanceof RpcError);
    assert.ok(err instanceof SkillgateError);
    assert.equal(err.code, -32602);
    assert.equal(err.stringCode, 'SKILL_NOT_FOUND');
    assert.match(err.details, /acme\.no\.such/);
    assert.equal(err.method, 'describe_skill');
    assert.equal(err.retryable, false);
    return true;
  });
  await assert.rejects(client.executeSkill({ name: 'acme.no.such' }), { stringCode: 'SKILL_NOT_FOUND' });
  assert.equal(client.state, 'ready', 'an error response leaves the connection up');
});

test('bad params and unknown methods are errors, and the connection lives', async () => {
  await assert.rejects(client.describeSkill({}), { stringCode: 'JSONRPC_INVALID_PARAMS' });
  await assert.rejects(client.readBlob({ blob_id: 'blob:0000' }), (err) => ['JSONRPC_INVALID_PARAMS', 'BLOB_NOT_FOUND'].includes(err.stringCode));
  await assert.rejects(client.call('no_such_method'), { stringCode: 'JSONRPC_METHOD_NOT_FOUND', code: -32601 });
  await assert.rejects(client.call('list_skills', [1]), TypeError);
  await assert.rejects(client.call('list_skills', null), TypeError);
  await assert.rejects(client.call(''), TypeError);
  assert.ok((await client.listSkills()).skills.length > 0);
});

test('the generic call and the CamelCase aliases', async () => {
  const res = await client.call('ListSkills', {});
  assert.ok(res.skills.length > 0);
  assert.deepEqual(await client.call('_Keepalive'), {});
});

test('an outgoing message over the limit fails alone, by its UTF-8 size', async () => {
  // 600,000 characters but 1.2 MB of UTF-8: over the gateway's 1 MiB.
  const content = 'é'.repeat(600_000);
  assert.ok(content.length < 1 << 20);
  await assert.rejects(client.createBlob({ content }), (err) => {
    assert.ok(err instanceof FrameTooLargeError);
    assert.equal(err.stringCode, 'MESSAGE_TOO_LARGE');
    assert.ok(err.size > 1 << 20);
    return true;
  });
  const ok = await client.createBlob({ content: 'é'.repeat(100_000) });
  assert.equal(ok.size_bytes, 200_000);
});

test('an incoming frame over the client limit aborts that connection', async (t) => {
  const small = new Client({ ...gw.address(), maxMessageSize: 2048 });
  t.after(() => small.close());
  await small.connect();
  const closed = new Promise((resolve) => small.once('close', resolve));
  await assert.rejects(small.loadSkillsProtocolGuide(), (err) => {
    assert.ok(err instanceof CloseReasonError);
    assert.equal(err.remote, false);
    assert.equal(err.stringCode, 'JSONRPC_PARSE_ERROR');
    assert.match(err.details, /exceeds the limit of 2048 bytes/);
    return true;
  });
  assert.equal((await closed).stringCode, 'JSONRPC_PARSE_ERROR');
  assert.equal(small.state, 'closed');
});

test('a call timeout gives up on the answer and leaves the connection up', async () => {
  const slow = client.runCode({ code: 'import time\ndef main(args):\n    time.sleep(1)\n    return {}\n' }, { timeoutMs: 1 });
  await assert.rejects(slow, { stringCode: 'CALL_TIMEOUT' });
  const ac = new AbortController();
  const aborted = client.listSkills({}, { signal: ac.signal });
  ac.abort(new Error('stop'));
  await assert.rejects(aborted, /stop/);
  // The late answers are dropped, not taken for protocol violations.
  const run = await client.runCode({ code: 'def main(args):\n    return {"ok": True}\n' }, { timeoutMs: PATIENCE_MS });
  assert.deepEqual(run.output, { ok: true });
});

test('calls before connect() and after close() fail clearly', async () => {
  const c = new Client(gw.address());
  await assert.rejects(c.listSkills(), { stringCode: 'NOT_CONNECTED' });
  await c.connect();
  await assert.rejects(c.connect(), { stringCode: 'ALREADY_CONNECTED' });
  await c.close();
  await c.close();
  await assert.rejects(c.listSkills(), { stringCode: 'CONNECTION_CLOSED' });
});

test('a refused connection rejects with CONNECT_FAILED', async () => {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  await assert.rejects(connect({ port, connectTimeoutMs: PATIENCE_MS }), (err) => {
    assert.ok(err instanceof ConnectError);
    assert.equal(err.stringCode, 'CONNECT_FAILED');
    assert.equal(err.cause.code, 'ECONNREFUSED');
    return true;
  });
});

test('an unsupported protocol version is refused by Initialize', async () => {
  const c = new Client({ ...gw.address(), protocolVersion: '2.0' });
  await assert.rejects(c.connect(), { stringCode: 'VERSION_INCOMPATIBLE' });
  assert.equal(c.state, 'closed');
});

test('calls made while Initialize is in flight wait for it by default', async (t) => {
  const c = new Client(gw.address());
  t.after(() => c.close());
  const init = c.connect();
  const calls = [c.listSkills(), c.describeSkill({ name: 'acme.math.add' })];
  await init;
  const [list, desc] = await Promise.all(calls);
  assert.ok(list.skills.length > 0);
  assert.equal(desc.skill.name, 'acme.math.add');
});

// Initialize and calls in one write: the gateway must complete Initialize
// before it handles what follows it on the connection.
test('calls pipelined behind Initialize in one write are served', async (t) => {
  const c = new Client({ ...gw.address(), pipeline: true });
  t.after(() => c.close());
  const init = c.connect();
  const calls = [c.listSkills(), c.describeSkill({ name: 'acme.math.add' }), c.loadSkillsProtocolGuide()];
  await init;
  const [list, desc, guide] = await Promise.all(calls);
  assert.ok(list.skills.length > 0);
  assert.equal(desc.skill.name, 'acme.math.add');
  assert.ok(guide.content.length > 0);
});

test('raw: Initialize and two calls written with one socket write', async (t) => {
  const socket = net.connect(gw.address());
  t.after(() => socket.destroy());
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const frames = [
    { jsonrpc: '2.0', id: 'r-1', method: 'Initialize', params: { protocol_version: '1.0', client: { name: 'raw', version: '0' } } },
    { jsonrpc: '2.0', id: 'r-2', method: 'list_skills', params: {} },
    { jsonrpc: '2.0', id: 'r-3', method: 'describe_skill', params: { name: 'acme.math.add' } },
  ].map((m) => encodeFrame(m, 1 << 20));
  socket.write(Buffer.concat(frames));
  const parser = new FrameParser();
  const answers = new Map();
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no answers')), PATIENCE_MS);
    socket.on('data', (chunk) => {
      for (const body of parser.push(chunk)) {
        const msg = JSON.parse(body.toString());
        if (msg.id) answers.set(msg.id, msg);
      }
      if (answers.size === 3) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  for (const id of ['r-1', 'r-2', 'r-3']) {
    assert.ok(answers.get(id).result, `${id}: ${JSON.stringify(answers.get(id))}`);
  }
});

test('the README example runs as written', async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const example = readme.match(/```js\n([\s\S]*?)```/)[1];
  assert.ok(example.split('\n').filter(Boolean).length <= 10, 'the example stays ten lines');
  const dir = tempDir(t, 'skillgate-readme-');
  const file = join(dir, 'example.mjs');
  writeFileSync(file, example
    .replace("'@skillgate/client'", JSON.stringify(new URL('../src/index.js', import.meta.url).href))
    .replace('port: 7400', `port: ${gw.address().port}`));
  const { stdout } = await run(process.execPath, [file], { timeout: PATIENCE_MS, env: { ...process.env, SKILLGATE_TOKEN: '' } });
  assert.match(stdout, /acme\.math\.add 1\.1\.0/);
  assert.match(stdout, /completed \{ sum: 42, count: 2 \}/);
  assert.match(stdout, /SKILL_NOT_FOUND/);
});
