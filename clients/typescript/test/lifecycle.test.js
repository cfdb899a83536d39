// Connection lifecycle against the real gateway: keepalives both ways, a
// stopped gateway, a drain, and TLS with client certificates.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, connect, CloseReasonError, ConnectError, RpcError, SkillgateError } from '../src/index.js';
import { gatewayBin, startGateway, nextEvent, tempDir, test, PATIENCE_MS } from './helpers.js';

test('a stopped gateway is detected by the client keepalive', async (t) => {
  const gw = await startGateway(t);
  const client = await connect({ ...gw.address(), keepalive: { intervalMs: 100, timeoutMs: 300 } });
  t.after(() => client.close());
  await gw.stop(); // the kernel still acknowledges: only keepalives can tell
  t.after(() => gw.signal('SIGCONT'));
  const closed = nextEvent(client, 'close');
  const pending = client.listSkills();
  await assert.rejects(pending, (err) => {
    assert.ok(err instanceof CloseReasonError);
    assert.equal(err.stringCode, 'KEEPALIVE');
    assert.equal(err.remote, false);
    return true;
  });
  const [reason] = await closed;
  assert.equal(reason.stringCode, 'KEEPALIVE');
  assert.equal(client.state, 'closed');
});

test('the client answers the gateway\'s keepalives and stays connected', async (t) => {
  const gw = await startGateway(t, ['--keepalive-interval', '100ms', '--keepalive-timeout', '5s']);
  // No client keepalive: its probes would count as traffic and the gateway would skip its own.
  const client = await connect({ ...gw.address(), keepalive: false });
  t.after(() => client.close());
  assert.equal(client.session.keepalive_interval_ms, 100);
  let answered = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${answered} keepalives`)), PATIENCE_MS);
    client.on('keepalive', () => {
      if (++answered === 5) {
        clearTimeout(timer);
        resolve();
      }
    });
    client.once('close', (reason) => reject(reason ?? new Error('closed')));
  });
  assert.equal(client.state, 'ready');
  assert.ok((await client.listSkills()).skills.length > 0);
});

test('a drained gateway closes with SERVER_SHUTDOWN and a retry hint', async (t) => {
  const gw = await startGateway(t);
  const client = await connect(gw.address());
  t.after(() => client.close());
  const disconnected = nextEvent(client, 'disconnect');
  const closed = nextEvent(client, 'close');
  const run = client.runCode({ code: 'import time\ndef main(args):\n    time.sleep(0.3)\n    return {"done": True}\n' });
  gw.signal('SIGTERM');
  // The run either finished inside the drain or was refused: never left hanging.
  const outcome = await run.then((r) => r.status, (err) => err.stringCode);
  assert.ok(['completed', 'SERVER_SHUTDOWN'].includes(outcome), outcome);
  const [reason] = await closed;
  assert.ok(reason instanceof CloseReasonError, String(reason));
  assert.equal(reason.remote, true);
  assert.equal(reason.stringCode, 'SERVER_SHUTDOWN');
  assert.deepEqual(reason.retry, { suggestedDelayMs: 1000, maxAttempts: 3 });
  assert.equal((await disconnected)[0], reason);
  await assert.rejects(client.listSkills(), { stringCode: 'SERVER_SHUTDOWN' });
  assert.deepEqual(await gw.exited, { code: 0, signal: null });
});

/**
 * Makes a CA, a server certificate for 127.0.0.1 and a client certificate
 * with the openssl CLI.
 * @returns {Record<string, string>} file name -> PEM
 */
function makeCerts(dir) {
  const ssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) {
    ssl('req', '-x509', ...ec, '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-days', '1', '-subj', `/CN=${ca}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  }
  for (const [name, ext] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'],
    ['client', 'extendedKeyUsage=clientAuth\n'],
  ]) {
    writeFileSync(join(dir, `${name}.ext`), ext);
    ssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
      '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
  }
  const pem = {};
  for (const f of ['ca.crt', 'other-ca.crt', 'server.crt', 'server.key', 'client.crt', 'client.key']) {
    pem[f] = readFileSync(join(dir, f), 'utf8');
  }
  return pem;
}

function haveOpenssl() {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

test('TLS with a client certificate (mutual TLS)', { skip: !haveOpenssl() && 'the openssl CLI is not installed' }, async (t) => {
  const dir = tempDir(t, 'skillgate-tls-');
  const pem = makeCerts(dir);
  const gw = await startGateway(t, ['--listen', '', '--tls-listen', '127.0.0.1:0', '--tls-cert', join(dir, 'server.crt'),
    '--tls-key', join(dir, 'server.key'), '--tls-client-ca', join(dir, 'ca.crt')]);
  const addr = gw.address('tls');

  await t.test('with a trusted client certificate, calls work', async () => {
    const client = await connect({ ...addr, tls: { ca: pem['ca.crt'], cert: pem['client.crt'], key: pem['client.key'] } });
    try {
      assert.ok((await client.listSkills()).skills.length > 0);
    } finally {
      await client.close();
    }
  });

  await t.test('without a client certificate, the connection is refused', async () => {
    const client = new Client({ ...addr, tls: { ca: pem['ca.crt'] } });
    await assert.rejects(client.connect(), (err) => {
      assert.ok(err instanceof SkillgateError, String(err));
      assert.ok(['CONNECT_FAILED', 'CONNECTION_CLOSED'].includes(err.stringCode), err.stringCode);
      return true;
    });
    assert.equal(client.state, 'closed');
  });

  await t.test('a server certificate from an untrusted CA is refused', async () => {
    const client = new Client({ ...addr, tls: { ca: pem['other-ca.crt'], cert: pem['client.crt'], key: pem['client.key'] } });
    await assert.rejects(client.connect(), (err) => {
      assert.ok(err instanceof ConnectError);
      assert.match(String(err.cause?.code), /UNABLE_TO_VERIFY|SELF_SIGNED|CERT/);
      return true;
    });
  });

  await t.test('a server name the certificate does not carry is refused', async () => {
    const client = new Client({ ...addr, tls: { ca: pem['ca.crt'], cert: pem['client.crt'], key: pem['client.key'], servername: 'elsewhere.example' } });
    await assert.rejects(client.connect(), (err) => {
      assert.ok(err instanceof ConnectError);
      assert.equal(err.cause?.code, 'ERR_TLS_CERT_ALTNAME_INVALID');
      return true;
    });
  });
});

test('message size limits follow the server\'s max_message_size unless set', async (t) => {
  const twoMiB = 2 << 20;
  const gw = await startGateway(t, ['--max-message-size', String(twoMiB)]);
  const content = 'ä'.repeat(750_000); // 1.5 MB of UTF-8: over 1 MiB, under 2 MiB

  const follows = await connect(gw.address());
  t.after(() => follows.close());
  assert.equal(follows.session.max_message_size, twoMiB);
  const blob = await follows.createBlob({ content });
  const back = await follows.readBlob({ blob_id: blob.blob_id, mode: 'full' });
  assert.equal(back.content, content, 'a 1.5 MB answer is accepted');

  const own = await connect({ ...gw.address(), maxMessageSize: 1 << 20 });
  t.after(() => own.close());
  await assert.rejects(own.createBlob({ content }), { stringCode: 'MESSAGE_TOO_LARGE', limit: 1 << 20 });

  const larger = await connect({ ...gw.address(), maxMessageSize: 4 << 20 });
  t.after(() => larger.close());
  await assert.rejects(larger.createBlob({ content: content + content }), { stringCode: 'MESSAGE_TOO_LARGE', limit: twoMiB });
  assert.equal(larger.state, 'ready');
});

test('a token in Initialize authenticates; none or a wrong one is refused', async (t) => {
  const dir = tempDir(t, 'skillgate-auth-');
  const out = execFileSync(gatewayBin, ['token'], { encoding: 'utf8' });
  const token = out.match(/^token: (\S+)$/m)[1];
  const hash = out.match(/^hash: +(\S+)$/m)[1];
  const authFile = join(dir, 'auth.yaml');
  writeFileSync(authFile, `identities:\n  - name: ci\n    class: service\n    tokens: ["${hash}"]\n` +
    '    methods: ["*"]\n    namespaces: ["*"]\n');
  const gw = await startGateway(t, ['--auth-file', authFile]);

  const client = await connect({ ...gw.address(), token });
  t.after(() => client.close());
  assert.equal(client.session.identity, 'ci');
  assert.ok((await client.listSkills()).skills.length > 0);

  for (const bad of [undefined, `${token}x`]) {
    const refused = new Client({ ...gw.address(), token: bad, reconnect: true });
    await assert.rejects(refused.connect(), (err) => {
      assert.ok(err instanceof RpcError, String(err));
      assert.match(err.stringCode, /^(AUTH_REQUIRED|PERMISSION_DENIED)$/);
      assert.equal(err.method, 'Initialize');
      return true;
    });
    assert.equal(refused.state, 'closed', 'a refused first connect is not retried');
  }
});
