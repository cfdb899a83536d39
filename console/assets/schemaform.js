// A form generated from a skill's args_schema (a JSON Schema whose top
// level is an object): one labelled field per property, typed by the
// property's type, required ones marked. Properties the form cannot type
// (objects, arrays, unions) take JSON in a text area. The gateway checks
// the arguments against the schema again; the form only helps.

function el(tag, text) {
  const n = document.createElement(tag);
  if (text !== undefined) n.textContent = text;
  return n;
}

let formSeq = 0;

// build appends the fields for schema to form and returns a function that
// reads the arguments object from them (throwing an Error naming the
// field whose value cannot be read).
export function build(form, schema) {
  const seq = ++formSeq;
  const props = (schema && typeof schema.properties === 'object' && schema.properties) || null;
  if (!props) {
    const id = 'args-json-' + seq;
    const wrap = el('div');
    const label = el('label', 'Arguments (a JSON object)');
    label.htmlFor = id;
    const area = el('textarea');
    area.id = id;
    area.name = 'args';
    area.value = '{}';
    wrap.append(label, area);
    form.appendChild(wrap);
    return () => parseJSON(area.value, 'Arguments', true);
  }
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const readers = [];
  for (const [name, prop] of Object.entries(props)) {
    readers.push(field(form, name, prop || {}, required.has(name), seq));
  }
  return () => {
    const args = {};
    for (const read of readers) {
      const [name, value, present] = read();
      if (present) args[name] = value;
    }
    return args;
  };
}

function parseJSON(text, what, wantObject) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(what + ': not valid JSON (' + e.message + ')');
  }
  if (wantObject && (v === null || typeof v !== 'object' || Array.isArray(v))) throw new Error(what + ': must be a JSON object');
  return v;
}

function field(form, name, prop, required, seq) {
  const id = 'arg-' + seq + '-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
  const wrap = el('div');
  const label = el('label', (prop.title || name) + (required ? ' (required)' : ''));
  label.htmlFor = id;
  wrap.appendChild(label);
  const hintText = [prop.description, prop.title ? 'argument ' + name : ''].filter(Boolean).join(' — ');
  let hint = null;
  if (hintText) {
    hint = el('span', hintText);
    hint.className = 'hint';
    hint.id = id + '-hint';
    wrap.appendChild(hint);
  }
  const type = Array.isArray(prop.type) ? null : prop.type;
  let input;
  let read;
  if (Array.isArray(prop.enum) && prop.enum.length > 0) {
    input = el('select');
    if (!required) input.appendChild(el('option', '(none)')).value = '';
    prop.enum.forEach((v, i) => {
      const o = el('option', JSON.stringify(v));
      o.value = String(i);
      input.appendChild(o);
    });
    read = () => (input.value === '' ? [name, undefined, false] : [name, prop.enum[Number(input.value)], true]);
  } else if (type === 'boolean') {
    input = el('input');
    input.type = 'checkbox';
    input.checked = prop.default === true;
    read = () => [name, input.checked, true];
  } else if (type === 'integer' || type === 'number') {
    input = el('input');
    input.type = 'number';
    input.step = type === 'integer' ? '1' : 'any';
    if (typeof prop.minimum === 'number') input.min = String(prop.minimum);
    if (typeof prop.maximum === 'number') input.max = String(prop.maximum);
    if (typeof prop.default === 'number') input.value = String(prop.default);
    read = () => {
      if (input.value === '') return [name, undefined, false];
      const n = Number(input.value);
      if (!Number.isFinite(n)) throw new Error((prop.title || name) + ': not a number');
      return [name, n, true];
    };
  } else if (type === 'string') {
    input = el(prop.maxLength > 200 || prop.format === 'textarea' ? 'textarea' : 'input');
    if (input.tagName === 'INPUT') input.type = 'text';
    if (typeof prop.default === 'string') input.value = prop.default;
    read = () => (input.value === '' && !required ? [name, undefined, false] : [name, input.value, true]);
  } else {
    input = el('textarea');
    input.value = prop.default !== undefined ? JSON.stringify(prop.default, null, 2) : '';
    const t = el('span', 'JSON' + (type ? ' (' + type + ')' : ''));
    t.className = 'hint';
    wrap.appendChild(t);
    read = () => (input.value.trim() === '' ? [name, undefined, false] : [name, parseJSON(input.value, prop.title || name, false), true]);
  }
  input.id = id;
  input.name = name;
  if (required && input.type !== 'checkbox') input.required = true;
  if (hint) input.setAttribute('aria-describedby', hint.id);
  wrap.appendChild(input);
  form.appendChild(wrap);
  return read;
}
