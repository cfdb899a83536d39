// Unit tests of the framing: the test vectors of the transport research
// (split and merged chunks, bad headers, byte lengths of UTF-8).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  encodeFrame,
  parseHeader,
  FrameParser,
  FrameError,
  FrameTooLargeError,
  VERSION,
} from '../src/index.js';

const frame = (s) => Buffer.from(s, 'latin1');
const bodies = (list) => list.map((b) => b.toString('utf8'));

test('encodes the spec example byte for byte', () => {
  const got = encodeFrame({ a: 'b!' }, 1024);
  assert.deepEqual([...got], [0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x61, 0x3a, 0x7b, 0x22, 0x61, 0x22, 0x3a,
    0x22, 0x62, 0x21, 0x22, 0x7d, 0x0a]);
});

test('the length counts UTF-8 bytes, not characters', () => {
  const got = encodeFrame({ m: 'ää' }, 1024); // 10 characters, 12 bytes
  assert.equal(got.subarray(0, 9).toString(), '0000000c:');
  assert.equal(got.length, 9 + 12 + 1);
  const emoji = encodeFrame({ m: '😀' }, 1024); // 2 UTF-16 units, 4 bytes
  assert.equal(parseHeader(emoji.subarray(0, 9)), 12);
});

test('an outgoing body over the limit is refused by its byte length', () => {
  const text = 'é'.repeat(600); // 600 characters, 1200 bytes
  const json = JSON.stringify({ t: text });
  assert.ok(json.length < 1024 && Buffer.byteLength(json) > 1024);
  assert.throws(() => encodeFrame({ t: text }, 1024), (err) => {
    assert.ok(err instanceof FrameTooLargeError);
    assert.equal(err.stringCode, 'MESSAGE_TOO_LARGE');
    assert.equal(err.size, Buffer.byteLength(json));
    return true;
  });
  assert.equal(encodeFrame({ t: text }, Buffer.byteLength(json)).length, Buffer.byteLength(json) + 10);
});

test('values JSON cannot carry are refused', () => {
  assert.throws(() => encodeFrame(undefined, 1024), TypeError);
  assert.throws(() => encodeFrame({ n: 1n }, 1024), TypeError);
});

test('parses one frame, and accepts uppercase hex', () => {
  const p = new FrameParser();
  assert.deepEqual(bodies(p.push(frame('0000000a:{"a":"b!"}\n'))), ['{"a":"b!"}']);
  assert.deepEqual(bodies(p.push(frame('0000000A:{"a":"b!"}\n'))), ['{"a":"b!"}']);
  assert.equal(p.partial, false);
});

test('two frames in one chunk give two bodies', () => {
  const p = new FrameParser();
  assert.deepEqual(bodies(p.push(frame('00000002:{}\n00000002:{}\n'))), ['{}', '{}']);
});

test('a frame delivered one byte per chunk gives one body', () => {
  const p = new FrameParser();
  const wire = Buffer.from('0000000c:{"m":"ää"}\n');
  const got = [];
  for (let i = 0; i < wire.length; i++) {
    got.push(...p.push(wire.subarray(i, i + 1)));
    assert.equal(p.partial, i < wire.length - 1);
  }
  assert.deepEqual(bodies(got), ['{"m":"ää"}']);
});

test('every split of three merged frames gives the same bodies', () => {
  const msgs = [{ a: 1 }, { b: 'ä'.repeat(40) }, {}];
  const wire = Buffer.concat(msgs.map((m) => encodeFrame(m, 1024)));
  const want = msgs.map((m) => JSON.stringify(m));
  for (let i = 0; i <= wire.length; i++) {
    for (const j of [i, Math.min(wire.length, i + 1), Math.min(wire.length, i + 9), wire.length]) {
      const p = new FrameParser();
      const got = [...p.push(wire.subarray(0, i)), ...p.push(wire.subarray(i, j)), ...p.push(wire.subarray(j))];
      assert.deepEqual(bodies(got), want, `split at ${i} and ${j}`);
    }
  }
});

test('a frame held back by its newline is returned with the next chunk, not later', () => {
  const p = new FrameParser();
  assert.deepEqual(p.push(frame('00000002:{}')), []);
  assert.deepEqual(bodies(p.push(frame('\n0000000'))), ['{}']);
});

test('an empty body is a frame (the JSON layer refuses it)', () => {
  assert.deepEqual(bodies(new FrameParser().push(frame('00000000:\n'))), ['']);
});

for (const [name, wire, kind] of [
  ['a non-hex digit', '0000000g:{"a":"b!"}\n', 'bad_length'],
  ['a leading plus', '+000000a:{"a":"b!"}\n', 'bad_length'],
  ['a leading space', ' 000000a:{"a":"b!"}\n', 'bad_length'],
  ['a missing colon', '0000000a;{"a":"b!"}\n', 'no_colon'],
  ['a wrong trailing byte', '0000000a:{"a":"b!"}X', 'no_newline'],
]) {
  test(`refuses ${name}`, () => {
    assert.throws(() => new FrameParser().push(frame(wire)), (err) => {
      assert.ok(err instanceof FrameError);
      assert.equal(err.kind, kind);
      assert.equal(err.stringCode, 'JSONRPC_PARSE_ERROR');
      return true;
    });
  });
}

test('an over-size header is refused before its body arrives', () => {
  const p = new FrameParser({ maxMessageSize: 1 << 20 });
  assert.throws(() => p.push(frame('7fffffff:{')), (err) => {
    assert.ok(err instanceof FrameTooLargeError);
    assert.equal(err.direction, 'incoming');
    assert.equal(err.size, 0x7fffffff);
    return true;
  });
  const exact = new FrameParser({ maxMessageSize: 2 });
  assert.deepEqual(bodies(exact.push(frame('00000002:{}\n'))), ['{}']);
  assert.throws(() => new FrameParser({ maxMessageSize: 1 }).push(frame('00000002:')), FrameTooLargeError);
});

test('a header split across chunks is checked once complete', () => {
  const p = new FrameParser();
  assert.deepEqual(p.push(frame('0000')), []);
  assert.throws(() => p.push(frame('zz00:')), FrameError);
});

test('the version in src/version.js is the package version', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.equal(VERSION, pkg.version);
});
