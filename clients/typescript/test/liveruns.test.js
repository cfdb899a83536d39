// Live runs against the real gateway: a streamed run's events, a
// background run watched from another connection, cancel, get and list.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, RpcError } from '../src/index.js';
import { startGateway, test, PATIENCE_MS } from './helpers.js';

/** @type {import('./helpers.js').Gateway} */
let gw;
const cleanups = [];

before(async () => {
  gw = await startGateway({ after: (fn) => cleanups.push(fn) }, ['--sandbox-workers', '1']);
});

after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const chatty = 'import runtime, time\ndef main(args):\n    for i in range(args["n"]):\n        print("line", i)\n' +
  '        runtime.progress(i + 1, args["n"])\n        time.sleep(args.get("pause", 0))\n    return {"lines": args["n"]}\n';

/** @param {number} n */
const lines = (n) => Array.from({ length: n }, (_, i) => `line ${i}\n`).join('');

/** Started first, finished last, seq without holes; returns the log text. */
function wellFormed(events) {
  assert.equal(events[0].type, 'started');
  assert.equal(events.at(-1).type, 'finished');
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
  return events.filter((e) => e.type === 'log').map((e) => e.text).join('');
}

async function client(t) {
  const c = await connect(gw.address());
  t.after(() => c.close());
  return c;
}

test('a streamed run delivers every event before its result', async (t) => {
  const c = await client(t);
  const events = [];
  const run = await c.runCode({ code: chatty, args: { n: 30 }, stream: true }, { timeoutMs: PATIENCE_MS, onEvent: (e) => events.push(e) });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(wellFormed(events), lines(30));
  assert.ok(events.every((e) => e.run_id === run.run_id));
});

test('onEvent alone streams a run, as in the Python client', async (t) => {
  const c = await client(t);
  const events = [];
  const run = await c.runCode({ code: chatty, args: { n: 3 } }, { timeoutMs: PATIENCE_MS, onEvent: (e) => events.push(e) });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(wellFormed(events), lines(3));
  const skillEvents = [];
  const add = await c.executeSkill({ name: 'acme.math.add', args: { values: [1, 2] } },
    { timeoutMs: PATIENCE_MS, onEvent: (e) => skillEvents.push(e) });
  assert.equal(add.status, 'completed', JSON.stringify(add));
  assert.deepEqual([skillEvents[0].type, skillEvents.at(-1).type], ['started', 'finished']);
  const none = [];
  const quiet = await c.runCode({ code: chatty, args: { n: 1 }, stream: false }, { onEvent: (e) => none.push(e) });
  assert.equal(quiet.status, 'completed');
  assert.deepEqual(none, [], 'an explicit stream: false is kept');
  await assert.rejects(c.runCode({ code: chatty, args: { n: 1 }, async: true }, { onEvent: () => {} }), TypeError);
});

test('a background run outlives its connection and is watched from another', async (t) => {
  const a = await connect(gw.address());
  const ref = await a.runCode({ code: chatty, args: { n: 20, pause: 0.02 }, async: true }, { timeoutMs: PATIENCE_MS });
  assert.equal(ref.status, 'running');
  await a.close();
  const b = await client(t);
  const events = [];
  const final = await b.watchRun({ run_id: ref.run_id }, { timeoutMs: PATIENCE_MS, onEvent: (e) => events.push(e) });
  assert.equal(final.status, 'completed');
  assert.equal(wellFormed(events), lines(20));
  const resumed = [];
  await b.watchRun({ run_id: ref.run_id, after_seq: 3 }, { timeoutMs: PATIENCE_MS, onEvent: (e) => resumed.push(e) });
  assert.deepEqual(resumed, events.slice(3));
  assert.deepEqual(await b.getRun({ run_id: ref.run_id, wait_ms: 100 }), final);
  const page = await b.listRuns({ status: 'finished', limit: 100 });
  assert.ok(page.runs.some((r) => r.run_id === ref.run_id));
});

test('cancel_run stops a run; unknown runs are RUN_NOT_FOUND', async (t) => {
  const c = await client(t);
  const ref = await c.runCode({ code: chatty, args: { n: 1000, pause: 0.05 }, async: true }, { timeoutMs: PATIENCE_MS });
  assert.deepEqual(await c.cancelRun({ run_id: ref.run_id }, { timeoutMs: PATIENCE_MS }), { run_id: ref.run_id, status: 'failed' });
  const run = await c.getRun({ run_id: ref.run_id });
  assert.equal(run.error?.type, 'CANCELLED');
  await assert.rejects(c.getRun({ run_id: 'run_0123456789abcdef' }),
    (err) => err instanceof RpcError && err.stringCode === 'RUN_NOT_FOUND');
  await assert.rejects(async () => c.watchRun({ run_id: ref.run_id }, {}), TypeError);
});
