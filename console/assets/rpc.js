// The console's only way to the gateway: JSON-RPC calls to POST /rpc on
// the origin that served the page, with the tab's token. Streams are the
// same calls answered as server-sent events (Accept: text/event-stream),
// read from the fetch body: EventSource can neither POST nor send an
// Authorization header.

const tokenKey = 'skillgate.console.token';

export function token() {
  return sessionStorage.getItem(tokenKey) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(tokenKey, t);
  else sessionStorage.removeItem(tokenKey);
}

export class RPCError extends Error {
  constructor(err) {
    super(err && err.message ? err.message : 'call failed');
    this.code = err ? err.code : 0;
    this.data = (err && err.data) || {};
    this.stringCode = this.data.string_code || '';
  }

  // describe is the error as a person reads it: the message, the string
  // code and the details.
  describe() {
    const parts = [this.message];
    if (this.stringCode) parts.push('(' + this.stringCode + ')');
    if (this.data.details && typeof this.data.details === 'string') parts.push(this.data.details);
    return parts.join(' ');
  }
}

let nextID = 1;

function request(method, params, accept, signal) {
  const headers = { 'Content-Type': 'application/json', Accept: accept };
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  return fetch('/rpc', {
    method: 'POST', headers, signal, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer',
    body: JSON.stringify({ jsonrpc: '2.0', id: 'console-' + nextID++, method, params: params || {} }),
  });
}

async function answer(resp) {
  let body;
  try {
    body = await resp.json();
  } catch {
    throw new RPCError({ code: 0, message: 'HTTP ' + resp.status + ' without a JSON-RPC answer' });
  }
  if (body.error) throw new RPCError(body.error);
  return body.result;
}

// call invokes one method and returns its result, or throws an RPCError.
export async function call(method, params, signal) {
  return answer(await request(method, params, 'application/json', signal));
}

// stream invokes a method that sends run_event notifications (watch_run,
// or a run started with stream: true), handing each event's params to
// onEvent as it arrives, and returns the final result.
export async function stream(method, params, onEvent, signal) {
  const resp = await request(method, params, 'text/event-stream', signal);
  if (!(resp.headers.get('Content-Type') || '').startsWith('text/event-stream')) return answer(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length === 0) continue;
      const msg = JSON.parse(data.join('\n'));
      if (name === 'response') {
        reader.cancel().catch(() => {});
        if (msg.error) throw new RPCError(msg.error);
        return msg.result;
      }
      if (msg.method === 'run_event') onEvent(msg.params);
    }
  }
  throw new RPCError({ code: 0, message: 'the stream ended before its answer' });
}
