// Test helpers: the real gateway as a child process on loopback ports, and
// a tiny framed server for the cases a real gateway cannot be made to do.
import { spawn } from 'node:child_process';
import { test as nodeTest } from 'node:test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { encodeFrame, FrameParser } from '../src/index.js';

const here = fileURLToPath(new URL('.', import.meta.url));
export const repoRoot = join(here, '..', '..', '..');
export const examplesDir = join(repoRoot, 'examples', 'skills');
export const gatewayBin = process.env.SKILLGATE_BIN || join(repoRoot, 'bin', 'skillgate');

/** A generous ceiling for anything that waits on the gateway; a safety net only. */
export const PATIENCE_MS = 60_000;
/** The ceiling of one whole test, so that a hang fails the test instead of the run. */
export const TEST_TIMEOUT_MS = 3 * PATIENCE_MS;

/**
 * node:test's test with TEST_TIMEOUT_MS as the default timeout.
 * @type {typeof nodeTest}
 */
export const test = /** @type {any} */ ((name, options, fn) => {
  if (typeof options === 'function') [fn, options] = [options, {}];
  return nodeTest(name, { timeout: TEST_TIMEOUT_MS, ...options }, fn);
});

/** Gateways still running, killed if this process is told to stop. */
const children = new Set();
const killChildren = () => {
  for (const c of children) c.kill('SIGKILL');
};
process.on('exit', killChildren);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    killChildren();
    process.exit(1);
  });
}

/**
 * Makes a temp dir removed when the test (or suite) ends.
 * @param {{after: (fn: () => void) => void}} t
 */
export function tempDir(t, prefix = 'skillgate-ts-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Starts `skillgate serve` on ephemeral loopback ports with the example
 * skills and a temp data dir, and resolves once it logs "skillgate ready".
 * The process is killed and the dir removed when the test ends.
 * @param {{after: (fn: () => any) => void}} t a test context or suite hook owner
 * @param {string[]} [args] extra flags
 */
export async function startGateway(t, args = []) {
  if (!existsSync(gatewayBin)) {
    throw new Error(`no gateway binary at ${gatewayBin}: build it (go build -o bin/skillgate ./cmd/skillgate) or set SKILLGATE_BIN`);
  }
  const dir = tempDir(t, 'skillgate-gw-');
  const proc = spawn(gatewayBin, [
    'serve', '--listen', '127.0.0.1:0', '--http-listen', '', '--metrics-listen', '',
    '--skills-dir', examplesDir, '--data-dir', join(dir, 'data'), '--watch-skills=false',
    '--sandbox-warm-pool', '0', ...args,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  const gw = new Gateway(proc);
  t.after(() => gw.kill());
  await gw.ready();
  return gw;
}

export class Gateway {
  /** @param {import('node:child_process').ChildProcess} proc */
  constructor(proc) {
    this.proc = proc;
    /** @type {Record<string, string>} listener name -> host:port */
    this.addrs = {};
    /** @type {Record<string, any>[]} */
    this.logs = [];
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
    this.lines = createInterface({ input: /** @type {any} */ (proc.stderr) });
    this.lines.on('line', (line) => {
      try {
        this.logs.push(JSON.parse(line));
      } catch {
        this.logs.push({ message: line });
      }
    });
  }

  /** Resolves on "skillgate ready"; rejects if the process exits first. */
  ready() {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the gateway did not become ready')), PATIENCE_MS);
      const onLine = () => {
        const rec = this.logs[this.logs.length - 1];
        if (rec.message === 'listening') this.addrs[rec.listener] = rec.addr;
        if (rec.message === 'skillgate ready') {
          clearTimeout(timer);
          this.lines.off('line', onLine);
          resolve(this);
        }
      };
      this.lines.on('line', onLine);
      this.exited.then(({ code }) => {
        clearTimeout(timer);
        reject(new Error(`the gateway exited (${code}) during start-up: ${JSON.stringify(this.logs.slice(-5))}`));
      });
    });
  }

  /**
   * Resolves with the first log record matching pred, waiting for it if
   * needed: the gateway's log lines race its answers.
   * @param {(rec: Record<string, any>) => boolean} pred
   */
  waitForLog(pred) {
    const found = this.logs.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no such log record')), PATIENCE_MS);
      const onLine = () => {
        const rec = this.logs[this.logs.length - 1];
        if (pred(rec)) {
          clearTimeout(timer);
          this.lines.off('line', onLine);
          resolve(rec);
        }
      };
      this.lines.on('line', onLine);
    });
  }

  /** @param {string} [listener] @returns {{host: string, port: number}} */
  address(listener = 'tcp') {
    const addr = this.addrs[listener];
    const i = addr.lastIndexOf(':');
    return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
  }

  /** @param {NodeJS.Signals} signal */
  signal(signal) {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
  }

  /**
   * Stops the gateway and resolves once the kernel reports it stopped: a
   * signal is delivered asynchronously, and a call sent before that could
   * still be answered.
   */
  async stop() {
    this.signal('SIGSTOP');
    const deadline = Date.now() + PATIENCE_MS;
    while (Date.now() < deadline) {
      const stat = readFileSync(`/proc/${this.proc.pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error('the gateway did not stop');
  }

  kill() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
    return this.exited;
  }
}

/**
 * Resolves with the arguments of the next `event` of emitter, or rejects
 * after PATIENCE_MS.
 * @param {import('node:events').EventEmitter} emitter
 * @param {string} event
 */
export function nextEvent(emitter, event) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} event`)), PATIENCE_MS);
    emitter.once(event, (...args) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

/**
 * A minimal framed server on a loopback port for scripted peers: handler
 * gets each connection's socket and a parsed-message stream.
 * @param {{after: (fn: () => any) => void}} t
 * @param {(peer: FakePeer) => void} onPeer
 */
export async function fakeServer(t, onPeer) {
  /** @type {Set<net.Socket>} */
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onPeer(new FakePeer(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  t.after(() => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => server.close(() => resolve(undefined)));
  });
  const { port } = /** @type {net.AddressInfo} */ (server.address());
  return { host: '127.0.0.1', port, server };
}

/** One connection of the fake server. */
export class FakePeer {
  /** @param {net.Socket} socket */
  constructor(socket) {
    this.socket = socket;
    /** @type {any[]} */
    this.received = [];
    /** @type {((msg: any) => void)[]} */
    this.waiting = [];
    const parser = new FrameParser({ maxMessageSize: 1 << 24 });
    socket.on('data', (chunk) => {
      for (const body of parser.push(chunk)) this.deliver(JSON.parse(body.toString('utf8')));
    });
  }

  /** @param {any} msg */
  deliver(msg) {
    const w = this.waiting.shift();
    if (w) w(msg);
    else this.received.push(msg);
  }

  /** @returns {Promise<any>} the next message from the client */
  next() {
    if (this.received.length > 0) return Promise.resolve(this.received.shift());
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** @param {any} msg */
  send(msg) {
    this.socket.write(encodeFrame(msg, Infinity));
  }

  /** Answers the client's Initialize. */
  async initialize(extra = {}) {
    const init = await this.next();
    this.send({
      jsonrpc: '2.0',
      id: init.id,
      result: {
        protocol_version: '1.0', server: { name: 'fake', version: '0' }, session_id: 's-fake',
        max_message_size: 1 << 20, keepalive_interval_ms: 30000, keepalive_timeout_ms: 20000, ...extra,
      },
    });
    return init;
  }
}
