// The console's views: runs, one run, skills, one skill, the gateway.
// Routes live in the URL's fragment (#/runs, #/runs/<id>, #/skills,
// #/skills/<name>[@<version>], #/gateway), so that the gateway serves one
// page and a reload keeps the view. Untrusted text (run output, logs,
// skill files, error messages) only ever reaches the page through
// textContent or, for a SKILL.md, the Markdown renderer, which uses the
// same.

import { call, stream, token, setToken, RPCError } from './rpc.js';
import { render as renderMarkdown } from './markdown.js';
import { build as buildForm } from './schemaform.js';

const $ = (id) => document.getElementById(id);
const state = { admin: false, anonymous: false, signedIn: false };
let leave = null; // stops the current view's polling and streams

// fill replaces node's children with the given ones, skipping the null
// ones (replaceChildren would show them as the text "null").
function fill(node, ...children) {
  node.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
}

function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k === 'text') n.textContent = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) n.append(c);
  return n;
}

function announce(text) {
  const a = $('announce');
  a.textContent = '';
  setTimeout(() => { a.textContent = text; }, 50);
}

function errorText(e) {
  return e instanceof RPCError ? e.describe() : String(e && e.message ? e.message : e);
}

function errorBox(e) {
  return el('p', { class: 'error', role: 'alert', text: errorText(e) });
}

function time(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

function duration(ms) {
  if (typeof ms !== 'number') return '';
  return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
}

function bytes(n) {
  if (typeof n !== 'number') return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + units[i];
}

function statusCell(status) {
  return el('span', { class: 'status status-' + status, text: status });
}

function facts(pairs) {
  const dl = el('dl', { class: 'facts' });
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    dl.append(el('dt', { text: k }), el('dd', {}, v));
  }
  return dl;
}

// every runs fn now and then every ms until the view is left.
function every(ms, fn) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    try { await fn(); } finally { if (!stopped) timer = setTimeout(tick, ms); }
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

// ---- sign-in ----

async function probe() {
  try {
    await call('list_runs', { limit: 1 });
  } catch (e) {
    if (e instanceof RPCError && e.stringCode === 'PERMISSION_DENIED') return { ok: true, admin: false };
    throw e;
  }
  try {
    await call('list_runs', { limit: 1, all_identities: true });
    return { ok: true, admin: true };
  } catch (e) {
    if (e instanceof RPCError && e.stringCode === 'PERMISSION_DENIED') return { ok: true, admin: false };
    throw e;
  }
}

async function signIn() {
  try {
    const p = await probe();
    state.signedIn = true;
    state.admin = p.admin;
    state.anonymous = !token();
    return true;
  } catch (e) {
    state.signedIn = false;
    if (e instanceof RPCError && e.stringCode === 'AUTH_REQUIRED') {
      if (token()) $('sign-in-error').textContent = 'That token was refused: ' + errorText(e);
      setToken('');
      return false;
    }
    $('sign-in-error').textContent = errorText(e);
    return false;
  }
}

function showChrome() {
  $('sign-in').hidden = state.signedIn;
  $('nav').hidden = !state.signedIn;
  $('who').hidden = !state.signedIn;
  $('nav-gateway').hidden = !state.admin;
  $('sign-out').hidden = state.anonymous;
  $('who-text').textContent = state.anonymous
    ? 'Open gateway: signed in as anonymous' + (state.admin ? ' (operator)' : '')
    : 'Signed in with a token' + (state.admin ? ' (admin)' : '');
}

// ---- routing ----

async function route() {
  if (leave) { leave(); leave = null; }
  const view = $('view');
  view.replaceChildren();
  if (!state.signedIn) { showChrome(); $('token').focus(); return; }
  const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  const [section, ...rest] = hash.split('/');
  const arg = rest.join('/');
  let name = section || 'runs';
  if (name === 'gateway' && !state.admin) name = 'runs';
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const ctrl = new AbortController();
  const stops = [() => ctrl.abort()];
  leave = () => stops.forEach((s) => s());
  const ctx = { view, signal: ctrl.signal, onLeave: (f) => stops.push(f) };
  if (name === 'runs' && arg) runView(ctx, arg);
  else if (name === 'skills' && arg) skillView(ctx, arg);
  else if (name === 'skills') skillsView(ctx);
  else if (name === 'gateway') gatewayView(ctx);
  else runsView(ctx);
  const h1 = view.querySelector('h1');
  if (h1) { h1.tabIndex = -1; h1.focus(); }
}

// ---- runs ----

function runsView(ctx) {
  const status = el('select', { id: 'f-status', name: 'status' },
    ...['', 'running', 'completed', 'failed'].map((s) => el('option', { value: s, text: s || 'any' })));
  const skill = el('input', { id: 'f-skill', name: 'skill', type: 'search', placeholder: 'acme.math.add or run_code' });
  const ident = el('input', { id: 'f-identity', name: 'identity', type: 'search' });
  const filters = el('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs', onsubmit: (e) => e.preventDefault() },
    el('div', {}, el('label', { for: 'f-status', text: 'Status' }), status),
    el('div', {}, el('label', { for: 'f-skill', text: 'Skill' }), skill),
    state.admin ? el('div', {}, el('label', { for: 'f-identity', text: 'Identity' }), ident) : null);
  const summary = el('p', { id: 'runs-summary', 'aria-live': 'polite' });
  const body = el('tbody', { id: 'runs-body' });
  const table = el('table', { 'aria-describedby': 'runs-summary' },
    el('caption', { class: 'visually-hidden', text: 'Runs, newest first' }),
    el('thead', {}, el('tr', {}, ...['Run', 'Skill', state.admin ? 'Identity' : null, 'Status', 'Started', 'Duration']
      .filter(Boolean).map((h) => el('th', { scope: 'col', text: h })))),
    body);
  const errors = el('div');
  ctx.view.append(el('h1', { text: 'Runs' }), filters, summary, errors, table);

  let runs = [];
  let lastText = '';
  const draw = () => {
    const want = status.value;
    const sk = skill.value.trim().toLowerCase();
    const id = ident.value.trim().toLowerCase();
    const shown = runs.filter((r) => (!want || r.status === want) &&
      (!sk || (r.what || '').toLowerCase().includes(sk)) &&
      (!id || (r.identity || '').toLowerCase().includes(id)));
    fill(body, ...shown.map((r) => el('tr', { 'data-run': r.run_id },
      el('td', {}, el('a', { href: '#/runs/' + encodeURIComponent(r.run_id), text: r.run_id })),
      el('td', { text: r.what }),
      state.admin ? el('td', { text: r.identity || '' }) : null,
      el('td', {}, statusCell(r.status)),
      el('td', {}, el('time', { datetime: r.started_at, text: time(r.started_at) })),
      el('td', { text: duration(r.duration_ms) }))));
    const running = shown.filter((r) => r.status === 'running').length;
    const text = shown.length + ' run' + (shown.length === 1 ? '' : 's') + ' shown, ' + running + ' running.';
    if (text !== lastText) { summary.textContent = text; lastText = text; }
  };
  for (const c of [status, skill, ident]) c.addEventListener('input', draw);
  ctx.onLeave(every(2000, async () => {
    try {
      const params = { limit: 100 };
      if (state.admin) params.all_identities = true;
      if (status.value === 'running') params.status = 'running';
      else if (status.value) params.status = 'finished';
      const res = await call('list_runs', params, ctx.signal);
      runs = res.runs || [];
      errors.replaceChildren();
      draw();
    } catch (e) {
      if (!ctx.signal.aborted) errors.replaceChildren(errorBox(e));
    }
  }));
}

function runView(ctx, runID) {
  const h1 = el('h1', { text: 'Run ' + runID });
  const head = el('div');
  const progress = el('progress', { id: 'run-progress', max: '1', 'aria-label': 'Progress' });
  const progressText = el('span', { id: 'run-progress-text' });
  const cancel = el('button', { type: 'button', class: 'danger', id: 'cancel-run', disabled: true, text: 'Cancel run' });
  const logs = el('ol', { class: 'logs', id: 'run-logs', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-label': 'Run output' });
  const result = el('section', { id: 'run-result', 'aria-live': 'polite', 'aria-labelledby': 'result-title' },
    el('h2', { id: 'result-title', text: 'Result' }), el('p', { text: 'The run has not finished yet.' }));
  const blobs = el('section', { id: 'run-blobs', 'aria-labelledby': 'blobs-title' }, el('h2', { id: 'blobs-title', text: 'Blobs' }));
  const errors = el('div');
  ctx.view.append(el('p', {}, el('a', { href: '#/runs', text: '← All runs' })), h1, head, errors,
    el('div', { class: 'row' }, progress, progressText, cancel),
    el('h2', { text: 'Logs' }), logs, result, blobs);

  let lastSeq = 0;
  let running = true;
  const seenBlobs = new Set();
  const addBlob = (id, label) => {
    if (seenBlobs.has(id)) return;
    seenBlobs.add(id);
    // Inputs come first, above the outputs the events may have listed.
    if (label === 'input') blobs.querySelector('h2').after(blobEntry(id, label, ctx));
    else blobs.append(blobEntry(id, label, ctx));
  };
  const onEvent = (ev) => {
    lastSeq = Math.max(lastSeq, ev.seq || 0);
    switch (ev.type) {
      case 'started':
        head.replaceChildren(facts([['What', ev.what], ['Queued', duration(ev.queued_ms)]]));
        break;
      case 'log': {
        const stream = ev.stream || 'log';
        const text = (ev.text || '').replace(/\n$/, '');
        for (const line of text.split('\n')) {
          logs.append(el('li', { class: 'line' }, el('span', { class: 'stream stream-' + stream, text: stream }), el('span', { class: 'text', text: line })));
        }
        logs.scrollTop = logs.scrollHeight;
        break;
      }
      case 'progress':
        if (typeof ev.total === 'number' && ev.total > 0) { progress.max = ev.total; progress.value = ev.progress; }
        else progress.removeAttribute('value');
        progressText.textContent = ev.progress + (ev.total ? ' / ' + ev.total : '') + (ev.message ? ' — ' + ev.message : '');
        break;
      case 'blob':
        addBlob(ev.blob_id, (ev.kind || '') + (ev.size_bytes !== undefined ? ', ' + bytes(ev.size_bytes) : ''));
        break;
      case 'gap':
        logs.append(el('li', { class: 'gap', text: '… events ' + ev.from_seq + ' to ' + ev.to_seq + ' are not shown (dropped or no longer retained)' }));
        break;
      case 'finished':
        running = false;
        cancel.disabled = true;
        break;
    }
  };
  const showResult = (run) => {
    running = run.status === 'running';
    cancel.disabled = !running;
    h1.textContent = 'Run ' + runID;
    h1.append(' ', statusCell(run.status));
    if (running) {
      if (run.what) head.replaceChildren(facts([['What', run.what], ['Started', time(run.started_at)]]));
      return;
    }
    if (run.status === 'completed' || run.status === 'failed') {
      progress.max = 1;
      progress.value = 1;
    }
    const parts = [el('h2', { id: 'result-title', text: 'Result' }),
      facts([['Status', statusCell(run.status)], ['Summary', run.summary], ['Duration', duration(run.duration_ms)]])];
    if (run.error) {
      parts.push(el('h3', { text: 'Error' }), facts([['Type', run.error.type], ['Message', run.error.message]]));
      if (run.error.details) parts.push(el('pre', { class: 'error-details', text: JSON.stringify(run.error.details, null, 2) }));
    }
    if (run.retry) {
      parts.push(el('p', { class: 'retry', text: 'Retry hint: wait ' + duration(run.retry.suggested_delay_ms) +
        ', at most ' + run.retry.max_attempts + ' attempts.' }));
    }
    if (run.output !== undefined) parts.push(el('h3', { text: 'Output' }), el('pre', { id: 'run-output', text: JSON.stringify(run.output, null, 2) }));
    if (lastSeq === 0 && run.logs_preview) parts.push(el('h3', { text: 'Logs preview' }), el('pre', { text: run.logs_preview }));
    fill(result, ...parts);
    for (const id of run.input_blobs || []) addBlob(id, 'input');
    for (const id of run.output_blobs || []) addBlob(id, 'output');
    if (run.logs_blob) addBlob(run.logs_blob, 'full logs');
  };
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      const r = await call('cancel_run', { run_id: runID }, ctx.signal);
      announce('Run ' + runID + ' cancelled: ' + r.status);
    } catch (e) {
      errors.replaceChildren(errorBox(e));
      cancel.disabled = !running;
    }
  });

  (async () => {
    try {
      const run = await call('get_run', { run_id: runID }, ctx.signal);
      showResult(run);
      // Follow the run's events; a stream cut short resumes after the
      // last event seen.
      for (let attempt = 0; attempt < 20 && !ctx.signal.aborted; attempt++) {
        try {
          const final = await stream('watch_run', { run_id: runID, after_seq: lastSeq }, onEvent, ctx.signal);
          showResult(final);
          announce('Run ' + runID + ' ' + final.status + '.');
          return;
        } catch (e) {
          if (ctx.signal.aborted || e instanceof RPCError && e.code !== 0) throw e;
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    } catch (e) {
      if (!ctx.signal.aborted) errors.replaceChildren(errorBox(e));
    }
  })();
}

// blobEntry is one blob of a run: a preview button (text shown, images
// displayed) and a download button.
function blobEntry(id, label, ctx) {
  const preview = el('div', { class: 'blob-preview', 'aria-live': 'polite' });
  const previewBtn = el('button', { type: 'button', class: 'secondary', text: 'Preview' });
  const download = el('button', { type: 'button', class: 'secondary', text: 'Download' });
  const item = el('div', { class: 'blob', 'data-blob': id },
    el('div', { class: 'row' }, el('code', { text: id }), el('span', { class: 'hint', text: label }), previewBtn, download), preview);
  previewBtn.addEventListener('click', async () => {
    preview.replaceChildren(el('p', { text: 'Loading…' }));
    try {
      const head = await call('read_blob', { blob_id: id, mode: 'sample_head', max_bytes: 65536 }, ctx.signal);
      if ((head.kind || '').startsWith('image/')) {
        const whole = await readWhole(id, ctx.signal);
        const url = URL.createObjectURL(whole);
        ctx.onLeave(() => URL.revokeObjectURL(url));
        preview.replaceChildren(el('img', { src: url, alt: 'Image blob ' + id + ' (' + head.kind + ')' }));
      } else if (head.encoding === 'utf-8') {
        fill(preview, el('pre', { class: 'blob-text', text: head.content }),
          head.truncated ? el('p', { class: 'hint', text: 'The first 64 KiB of ' + bytes(head.size_bytes) + '; download for all of it.' }) : null);
      } else {
        preview.replaceChildren(el('p', { text: head.kind + ', ' + bytes(head.size_bytes) + ': binary; download it to open it.' }));
      }
    } catch (e) {
      preview.replaceChildren(errorBox(e));
    }
  });
  download.addEventListener('click', async () => {
    try {
      const whole = await readWhole(id, ctx.signal);
      const url = URL.createObjectURL(whole);
      const a = el('a', { href: url, download: id.replace(/[^A-Za-z0-9_-]/g, '_') });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (e) {
      preview.replaceChildren(errorBox(e));
    }
  });
  return item;
}

// readWhole reads a blob of any size piece by piece (read_blob's range
// mode) into a Blob of its kind.
async function readWhole(id, signal) {
  const parts = [];
  let offset = 0;
  let kind = 'application/octet-stream';
  for (let i = 0; i < 4096; i++) {
    const piece = await call('read_blob', { blob_id: id, mode: 'range', offset, max_bytes: 262144 }, signal);
    kind = piece.kind || kind;
    if (piece.encoding === 'base64') {
      const bin = atob(piece.content);
      const buf = new Uint8Array(bin.length);
      for (let j = 0; j < bin.length; j++) buf[j] = bin.charCodeAt(j);
      parts.push(buf);
    } else {
      parts.push(new TextEncoder().encode(piece.content));
    }
    if (piece.next_offset === null || piece.next_offset === undefined) break;
    offset = piece.next_offset;
  }
  return new Blob(parts, { type: kind });
}

// ---- skills ----

function skillsView(ctx) {
  const q = el('input', { id: 'skill-search', type: 'search', name: 'q', placeholder: 'name or namespace' });
  const list = el('ul', { class: 'cards plain', id: 'skills-list' });
  const count = el('p', { 'aria-live': 'polite' });
  ctx.view.append(el('h1', { text: 'Skills' }),
    el('form', { class: 'filters', role: 'search', 'aria-label': 'Search skills', onsubmit: (e) => e.preventDefault() },
      el('div', {}, el('label', { for: 'skill-search', text: 'Search' }), q)), count, list);
  let skills = [];
  const draw = () => {
    const words = q.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const shown = skills.filter((s) => words.every((w) => s.name.toLowerCase().includes(w) || (s.namespace || '').toLowerCase() === w));
    list.replaceChildren(...shown.map((s) => el('li', { class: 'card' },
      el('h2', {}, el('a', { href: '#/skills/' + encodeURIComponent(s.name), text: s.name })),
      el('p', { class: 'hint', text: [s.namespace, s.kind, s.version].filter(Boolean).join(' · ') }),
      el('p', { text: s.description || '' }))));
    count.textContent = shown.length + ' of ' + skills.length + ' skills.';
  };
  q.addEventListener('input', draw);
  (async () => {
    try {
      let cursor = null;
      for (let i = 0; i < 50; i++) {
        const res = await call('list_skills', { detail: 'summary', limit: 1000, ...(cursor ? { cursor } : {}) }, ctx.signal);
        skills = skills.concat(res.skills || []);
        cursor = res.next_cursor;
        if (!cursor) break;
      }
      draw();
    } catch (e) {
      if (!ctx.signal.aborted) ctx.view.append(errorBox(e));
    }
  })();
}

function skillView(ctx, ref) {
  const at = ref.lastIndexOf('@');
  const name = at > 0 ? ref.slice(0, at) : ref;
  const version = at > 0 ? ref.slice(at + 1) : '';
  const h1 = el('h1', { text: name });
  ctx.view.append(el('p', {}, el('a', { href: '#/skills', text: '← All skills' })), h1);
  (async () => {
    try {
      const params = { name, detail: 'full' };
      if (version) params.version = version;
      const { skill } = await call('describe_skill', params, ctx.signal);
      h1.textContent = skill.name + ' ' + skill.version;
      const fileLink = (path) => '#/skills/' + encodeURIComponent(skill.name + '@' + skill.version) + '/files/' + path;
      ctx.view.append(...[
        el('p', { text: skill.description || '' }),
        facts([['Kind', skill.kind], ['Namespace', skill.namespace], ['Title', skill.title], ['Source', skill.source]]),
        skill.tags && skill.tags.length ? el('ul', { class: 'tags', 'aria-label': 'Tags' }, ...skill.tags.map((t) => el('li', { text: t }))) : null].filter(Boolean));
      if (skill.kind === 'action') ctx.view.append(await runForm(ctx, skill));
      const md = el('article', { class: 'markdown', id: 'skill-md', 'aria-label': 'SKILL.md' });
      md.append(renderMarkdown(skill.skill_md || '', (href) => {
        if (href.startsWith('#')) return null;
        const path = href.replace(/^\.\//, '').split(/[?#]/)[0];
        return (skill.files || []).some((f) => f.path === path) ? fileLink(path) : null;
      }));
      ctx.view.append(el('h2', { text: 'SKILL.md' }), md);
      ctx.view.append(el('h2', { text: 'Versions' }), el('ul', {}, ...(skill.versions || []).map((v) =>
        el('li', {}, v === skill.version ? el('strong', { text: v + ' (shown)' })
          : el('a', { href: '#/skills/' + encodeURIComponent(skill.name + '@' + v), text: v })))));
      const viewer = el('div', { id: 'file-viewer', 'aria-live': 'polite' });
      const files = el('table', {}, el('thead', {}, el('tr', {}, ...['File', 'Size', 'SHA-256'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, ...(skill.files || []).map((f) => el('tr', {},
          el('td', {}, el('button', { type: 'button', class: 'secondary', text: f.path, onclick: () => showFile(ctx, skill, f.path, viewer) })),
          el('td', { text: bytes(f.size_bytes) }), el('td', {}, el('code', { text: (f.sha256 || '').slice(0, 16) + '…' }))))));
      ctx.view.append(el('h2', { text: 'Files' }), files, viewer);
      ctx.view.append(el('h2', { text: 'Manifest' }), el('pre', { text: JSON.stringify(skill.manifest, null, 2) }));
      const fileRef = location.hash.split('/files/')[1];
      if (fileRef) showFile(ctx, skill, decodeURIComponent(fileRef), viewer);
    } catch (e) {
      if (!ctx.signal.aborted) ctx.view.append(errorBox(e));
    }
  })();
}

async function showFile(ctx, skill, path, viewer) {
  viewer.replaceChildren(el('h3', { text: path }), el('p', { text: 'Loading…' }));
  try {
    const f = await call('read_skill_file', { name: skill.name, version: skill.version, path, max_bytes: 262144 }, ctx.signal);
    fill(viewer, el('h3', { text: path }),
      f.encoding === 'utf-8' ? el('pre', { text: f.content }) : el('p', { text: 'Binary, ' + bytes(f.size_bytes) + '.' }),
      f.truncated ? el('p', { class: 'hint', text: 'Only the start of the file is shown.' }) : null);
  } catch (e) {
    viewer.replaceChildren(el('h3', { text: path }), errorBox(e));
  }
}

// runForm is the form that starts a run of an action skill, its fields
// generated from the skill's args_schema when it has one.
async function runForm(ctx, skill) {
  const section = el('section', { 'aria-labelledby': 'run-form-title' }, el('h2', { id: 'run-form-title', text: 'Run this skill' }));
  let schema = null;
  const schemaPath = skill.manifest && skill.manifest.runtime && skill.manifest.runtime.args_schema;
  if (schemaPath) {
    try {
      const f = await call('read_skill_file', { name: skill.name, version: skill.version, path: schemaPath }, ctx.signal);
      schema = JSON.parse(f.content);
      section.append(el('details', {}, el('summary', { text: 'args_schema (' + schemaPath + ')' }),
        el('pre', { id: 'args-schema', text: JSON.stringify(schema, null, 2) })));
    } catch (e) {
      section.append(errorBox(e));
    }
  }
  const form = el('form', { class: 'args', id: 'run-form', 'aria-labelledby': 'run-form-title' });
  const read = buildForm(form, schema);
  const status = el('p', { role: 'status' });
  form.append(el('button', { type: 'submit', text: 'Start run' }), status);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    let args;
    try {
      args = read();
    } catch (err) {
      status.textContent = err.message;
      return;
    }
    status.textContent = 'Starting…';
    try {
      const r = await call('execute_skill', { name: skill.name, version: skill.version, args, async: true }, ctx.signal);
      location.hash = '#/runs/' + encodeURIComponent(r.run_id);
    } catch (err) {
      status.textContent = errorText(err);
    }
  });
  section.append(form);
  return section;
}

// ---- gateway ----

function gatewayView(ctx) {
  const body = el('div', { id: 'gateway-status' });
  const updated = el('p', { class: 'hint' });
  ctx.view.append(el('h1', { text: 'Gateway' }), updated, body);
  ctx.onLeave(every(2000, async () => {
    try {
      const s = await call('gateway_status', {}, ctx.signal);
      const card = (title, ...content) => el('section', { class: 'card', 'aria-label': title }, el('h2', { text: title }), ...content);
      const counts = (m) => facts(Object.entries(m || {}).sort().map(([k, v]) => [k, String(v)]));
      body.replaceChildren(el('div', { class: 'cards' },
        card('Server', facts([['Name', s.server.name], ['Version', s.server.version], ['Started', time(s.server.started_at)]])),
        card('Connections', counts(s.connections)),
        card('Calls in flight', counts(s.requests_in_flight)),
        card('Runs', facts([['In flight', String(s.runs.in_flight)], ['Queued', String(s.runs.queued)]])),
        card('Sandbox', s.sandbox ? facts([['Workers', String(s.sandbox.workers)], ['Warm and ready', String(s.sandbox.warm_ready)],
          ['Starting', String(s.sandbox.starting)], ['Templates', s.sandbox.templates ? 'on' : 'off'],
          ['Template restarts', String(s.sandbox.template_restarts)], ['Warm sandbox memory', bytes(s.sandbox.warm_sandbox_bytes)],
          ['Templates running', String(s.sandbox.templates_running)], ['Template memory', bytes(s.sandbox.template_bytes)]])
          : el('p', { text: s.sandbox_unavailable || 'unavailable' })),
        card('Blob store', facts([['Blobs', String(s.blobs.count)], ['Bytes', bytes(s.blobs.bytes)],
          ['Quota', s.blobs.quota_bytes ? bytes(s.blobs.quota_bytes) : 'none']]))));
      updated.textContent = 'Updated ' + new Date().toLocaleTimeString() + '.';
    } catch (e) {
      if (!ctx.signal.aborted) body.replaceChildren(errorBox(e));
    }
  }));
}

// ---- start ----

async function start() {
  $('sign-in-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    $('sign-in-error').textContent = '';
    setToken($('token').value.trim());
    $('token').value = '';
    if (await signIn()) announce('Signed in.');
    showChrome();
    route();
  });
  $('sign-out').addEventListener('click', () => {
    setToken('');
    state.signedIn = false;
    state.admin = false;
    showChrome();
    route();
    announce('Signed out.');
  });
  window.addEventListener('hashchange', route);
  await signIn();
  showChrome();
  route();
}

start();
