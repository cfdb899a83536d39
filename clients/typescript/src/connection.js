// @ts-check
/**
 * One framed connection: the socket, the frame parser, the calls in flight,
 * keepalives both ways and the close reason.
 *
 * State and ownership: everything runs on Node's event loop, so no locks.
 * `pending` maps request ids to their callers until answered; `queue` holds
 * frames not yet written; `closeReason` is the first reason seen (the
 * server's _CloseReason or this side's abort) and becomes the error of every
 * call still pending when the socket closes. `finish` runs once.
 * @module
 */
import { TextDecoder } from 'node:util';
import { encodeFrame, FrameParser, DEFAULT_MAX_MESSAGE_SIZE } from './framing.js';
import {
  CallTimeoutError,
  CloseReasonError,
  ConnectionClosedError,
  FrameError,
  RpcError,
} from './errors.js';
import { ERR_INVALID, ERR_PARSE, errorProblem, isObject } from './wire.js';

/** How long an abort waits for its _CloseReason to leave before destroying the socket. */
const ABORT_LINGER_MS = 1000;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * @typedef {object} ConnectionOptions
 * @property {number} [maxMessageSize] largest incoming body, and outgoing until setOutgoingLimit
 * @property {string} [idPrefix] request ids are `<idPrefix>-<n>`
 * @property {number} [keepaliveIntervalMs] probe the server after this long without traffic; 0: never
 * @property {number} [keepaliveTimeoutMs] abort with KEEPALIVE when a probe is unanswered this long
 * @property {(method: string, params: any) => void} [onNotification]
 * @property {() => void} [onServerKeepalive] called after each server _Keepalive is answered
 * @property {(reason: Error) => void} [onClose] called once, when the connection is over
 */

/**
 * @typedef {object} Pending
 * @property {string} method
 * @property {(result: Record<string, any>) => void} resolve
 * @property {(err: Error) => void} reject
 * @property {boolean} abandoned the caller gave up (timeout, abort); drop the answer
 * @property {() => void} cleanup clears the caller's timer and abort listener
 */

export class Connection {
  /**
   * The socket may still be connecting: frames queue until start().
   * @param {import('node:net').Socket} socket
   * @param {ConnectionOptions} [options]
   */
  constructor(socket, options = {}) {
    this.socket = socket;
    this.options = options;
    const max = options.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
    this.parser = new FrameParser({ maxMessageSize: max });
    this.outgoingLimit = max;
    this.idPrefix = options.idPrefix ?? 'ts';
    this.nextId = 0;
    /** @type {Map<string, Pending>} */
    this.pending = new Map();
    /** @type {Buffer[]} */
    this.queue = [];
    this.started = false;
    this.flushScheduled = false;
    this.blocked = false; // the socket asked us to wait for 'drain'
    this.trafficSeen = false;
    /** @type {NodeJS.Timeout | undefined} */
    this.keepaliveTimer = undefined;
    /** @type {Error | undefined} */
    this.closeReason = undefined;
    this.finished = false;
    /** @type {Promise<Error>} settles with the reason once the connection is over */
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    socket.on('data', (chunk) => this.onData(chunk));
    socket.on('drain', () => {
      this.blocked = false;
      this.flush();
    });
    socket.on('error', (err) => this.finish(err));
    socket.on('close', () => this.finish(undefined));
  }

  /** Starts writing and probing; call once the socket is connected. */
  start() {
    if (this.finished) return;
    this.started = true;
    this.armKeepalive();
    this.flush();
  }

  /**
   * Sets the largest body this side sends, e.g. to the max_message_size the
   * server advertised.
   * @param {number} limit
   */
  setOutgoingLimit(limit) {
    this.outgoingLimit = limit;
  }

  /**
   * Sets the largest body this side accepts; frames already begun keep the
   * limit they were checked against.
   * @param {number} limit
   */
  setIncomingLimit(limit) {
    this.parser.maxMessageSize = limit;
  }

  /**
   * Sends a request and resolves with its result object.
   * @param {string} method
   * @param {Record<string, any>} params
   * @param {{signal?: AbortSignal, timeoutMs?: number}} [callOptions]
   * @returns {Promise<Record<string, any>>}
   */
  request(method, params, callOptions = {}) {
    if (this.finished) {
      return Promise.reject(this.closedError());
    }
    const { signal, timeoutMs } = callOptions;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = `${this.idPrefix}-${++this.nextId}`;
    let frame;
    try {
      frame = encodeFrame({ jsonrpc: '2.0', method, params, id }, this.outgoingLimit);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      /** @type {Pending} */
      const p = { method, resolve, reject, abandoned: false, cleanup: () => {} };
      this.pending.set(id, p);
      this.watchCaller(p, signal, timeoutMs);
      this.send(frame, false);
    });
  }

  /**
   * Makes a call give up on a timeout or an abort signal. Its id stays
   * pending, so that a late answer is recognised and dropped.
   * @param {Pending} p
   * @param {AbortSignal | undefined} signal
   * @param {number | undefined} timeoutMs
   */
  watchCaller(p, signal, timeoutMs) {
    /** @param {Error} err */
    const giveUp = (err) => {
      if (p.abandoned) return;
      p.abandoned = true;
      p.cleanup();
      p.reject(err);
    };
    const timer = timeoutMs !== undefined && timeoutMs > 0
      ? setTimeout(() => giveUp(new CallTimeoutError(p.method, timeoutMs)), timeoutMs)
      : undefined;
    const onAbort = () => giveUp(signal?.reason ?? new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    p.cleanup = () => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
  }

  /**
   * Sends a notification (no answer).
   * @param {string} method
   * @param {Record<string, any>} params
   */
  notify(method, params) {
    if (this.finished) throw this.closedError();
    this.send(encodeFrame({ jsonrpc: '2.0', method, params }, this.outgoingLimit), false);
  }

  /**
   * Closes the connection without a reason (a normal end): queued frames
   * are written first, then the socket is ended. Calls still pending fail
   * with CONNECTION_CLOSED.
   * @returns {Promise<Error>}
   */
  close() {
    if (!this.finished) {
      this.closeReason ??= new ConnectionClosedError('connection closed by the client');
      this.flush();
      this.socket.end();
      this.lingerThenDestroy();
    }
    return this.closed;
  }

  /**
   * Aborts as the spec says: a _CloseReason, then close. Pending calls fail
   * at once with the reason.
   * @param {{code: number, message: string, data?: Record<string, any>}} error
   */
  abort(error) {
    if (this.finished) return;
    const reason = new CloseReasonError(error, false);
    this.closeReason ??= reason;
    // Nothing queued may follow the reason. While the socket is blocked the
    // reason is not written at all: the spec forbids a write that may hang.
    this.queue = [];
    try {
      this.send(encodeFrame({ jsonrpc: '2.0', method: '_CloseReason', params: { error } }, this.outgoingLimit), true);
    } catch {
      // A reason too large to send is left out: closing matters more.
    }
    this.flush();
    if (this.started) {
      this.socket.end();
      this.lingerThenDestroy();
    } else {
      this.socket.destroy();
    }
    this.finish(undefined);
  }

  /** Destroys the socket if the peer does not finish the close soon. */
  lingerThenDestroy() {
    setTimeout(() => this.socket.destroy(), ABORT_LINGER_MS).unref();
  }

  /**
   * Destroys the socket at once, failing pending calls with err.
   * @param {Error} err
   */
  destroy(err) {
    this.closeReason ??= err;
    this.socket.destroy();
    this.finish(undefined);
  }

  /** @returns {Error} the error for calls on a finished connection */
  closedError() {
    return this.closeReason ?? new ConnectionClosedError('connection closed');
  }

  /**
   * Ends the connection's life once: fails pending calls and reports.
   * @param {Error | undefined} socketError
   */
  finish(socketError) {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.keepaliveTimer);
    const reason = this.closeReason ?? new ConnectionClosedError(
      socketError ? `connection lost: ${socketError.message}` : 'connection closed by the server',
      socketError ? { cause: socketError } : undefined,
    );
    this.closeReason = reason;
    for (const p of this.pending.values()) {
      if (!p.abandoned) {
        p.cleanup();
        p.reject(reason);
      }
    }
    this.pending.clear();
    this.queue = [];
    this.resolveClosed?.(reason);
    this.options.onClose?.(reason);
  }

  // ---- writing ----

  /**
   * Queues a frame; urgent ones (keepalive answers, _CloseReason) jump the
   * queue. Frames queued in one turn of the event loop leave in one write.
   * @param {Buffer} frame
   * @param {boolean} urgent
   */
  send(frame, urgent) {
    if (urgent) this.queue.unshift(frame);
    else this.queue.push(frame);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  flush() {
    if (!this.started || this.blocked || this.queue.length === 0 || this.socket.destroyed) return;
    const data = this.queue.length === 1 ? this.queue[0] : Buffer.concat(this.queue);
    this.queue = [];
    if (!this.socket.write(data)) this.blocked = true;
  }

  // ---- reading ----

  /** @param {Buffer} chunk */
  onData(chunk) {
    if (this.finished) return;
    let bodies;
    try {
      bodies = this.parser.push(chunk);
    } catch (err) {
      const e = /** @type {FrameError} */ (err);
      this.abort({ ...ERR_PARSE, data: { string_code: 'JSONRPC_PARSE_ERROR', details: e.message } });
      return;
    }
    // Only whole messages count as signs of life: a server that trickles a
    // frame byte by byte is probed, and the probe's answer is stuck behind it.
    if (bodies.length > 0) this.trafficSeen = true;
    for (const body of bodies) {
      if (this.finished) return;
      this.onMessage(body);
    }
  }

  /** @param {Buffer} body */
  onMessage(body) {
    let msg;
    try {
      msg = JSON.parse(utf8.decode(body));
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      this.abort({ ...ERR_PARSE, data: { string_code: 'JSONRPC_PARSE_ERROR', details: why } });
      return;
    }
    const problem = this.route(msg);
    if (problem) {
      this.abort({ ...ERR_INVALID, data: { string_code: 'JSONRPC_INVALID_REQUEST', details: problem } });
    }
  }

  /**
   * Handles one parsed message.
   * @param {unknown} msg
   * @returns {string | undefined} why the message is invalid, if it is
   */
  route(msg) {
    if (!isObject(msg)) return 'a message must be a JSON object';
    if (msg.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
    if ('method' in msg) {
      if (typeof msg.method !== 'string') return 'method must be a string';
      return 'id' in msg ? this.onRequest(msg) : this.onNotification(msg.method, msg.params);
    }
    if ('id' in msg) return this.onResponse(msg);
    return 'the message is neither a request, a notification nor a response';
  }

  /**
   * Answers the server's requests: _Keepalive, and -32601 for anything else
   * (this client serves no methods).
   * @param {Record<string, any>} msg
   */
  onRequest(msg) {
    if (typeof msg.id !== 'string') return 'a request id must be a string';
    if (!isObject(msg.params)) return 'request params must be a JSON object';
    if (msg.method === '_Keepalive') {
      this.send(encodeFrame({ jsonrpc: '2.0', result: {}, id: msg.id }, Infinity), true);
      this.options.onServerKeepalive?.();
      return undefined;
    }
    const error = { code: -32601, message: 'Method not found.', data: { string_code: 'JSONRPC_METHOD_NOT_FOUND' } };
    this.send(encodeFrame({ jsonrpc: '2.0', error, id: msg.id }, Infinity), false);
    return undefined;
  }

  /**
   * @param {string} method
   * @param {unknown} params
   */
  onNotification(method, params) {
    if (method === '_CloseReason') {
      // The server closes the connection next; keep the first reason.
      const error = isObject(params) ? params.error : undefined;
      if (!this.closeReason && errorProblem(error) === undefined) {
        this.closeReason = new CloseReasonError(/** @type {any} */ (error), true);
      }
      clearTimeout(this.keepaliveTimer); // send nothing more in answer to it
      return undefined;
    }
    this.options.onNotification?.(method, params);
    return undefined;
  }

  /** @param {Record<string, any>} msg */
  onResponse(msg) {
    if (typeof msg.id !== 'string') return 'a response id must be a string';
    const p = this.pending.get(msg.id);
    if (!p) return `answer to unknown request id ${JSON.stringify(msg.id)}`;
    const hasResult = 'result' in msg;
    if (hasResult === 'error' in msg) return 'a response must carry exactly one of result and error';
    if (hasResult && !isObject(msg.result)) return 'result must be a JSON object';
    const problem = hasResult ? undefined : errorProblem(msg.error);
    if (problem) return problem;
    this.pending.delete(msg.id);
    if (p.abandoned) return undefined;
    p.cleanup();
    if (hasResult) p.resolve(msg.result);
    else p.reject(new RpcError(msg.error, p.method));
    return undefined;
  }

  // ---- keepalive ----

  armKeepalive() {
    const interval = this.options.keepaliveIntervalMs ?? 0;
    if (interval <= 0 || this.finished) return;
    this.keepaliveTimer = setTimeout(() => this.keepaliveTick(), interval);
    this.keepaliveTimer.unref();
  }

  /**
   * Probes the server unless it was heard from during the last interval,
   * and aborts with KEEPALIVE when the probe goes unanswered.
   */
  keepaliveTick() {
    if (this.finished) return;
    if (this.trafficSeen) {
      this.trafficSeen = false;
      this.armKeepalive();
      return;
    }
    const timeoutMs = this.options.keepaliveTimeoutMs ?? 20000;
    this.request('_Keepalive', {}, { timeoutMs }).then(
      () => {
        this.trafficSeen = false; // the answer itself is no reason to skip the next probe
        this.armKeepalive();
      },
      (err) => {
        if (err instanceof CallTimeoutError) {
          this.abort({
            code: -32000,
            message: 'Keepalive timeout.',
            data: { string_code: 'KEEPALIVE', details: `no answer to _Keepalive within ${timeoutMs} ms` },
          });
        } else if (err instanceof RpcError && !(err instanceof CloseReasonError)) {
          this.armKeepalive(); // an error answer still proves the server alive
        }
      },
    );
  }
}
