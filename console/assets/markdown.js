// A small Markdown renderer for SKILL.md files, which skill authors write
// and the console must treat as untrusted. It builds DOM nodes and puts
// text in them with textContent only: raw HTML in the source stays text,
// no attribute but href is ever set from the source, and an href is set
// only for http:, https: and relative URLs. What it renders: front
// matter (dropped), ATX headings, paragraphs, fenced and indented code,
// block quotes, ordered and unordered lists, thematic breaks, and inline
// code, strong, emphasis, links and autolinks. Images become links to
// their source (no request leaves the page on its own).

// safeHref returns the URL when a link may point there, else null. A
// scheme other than http or https (javascript:, data:, vbscript:, ...)
// is refused, and so is any control character or whitespace, which
// browsers strip from a URL before reading its scheme ("java\tscript:").
export function safeHref(url) {
  const u = String(url).trim();
  if (u === '' || /[\u0000-\u0020\u007f-\u009f\\]/.test(u)) return null;
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(u);
  if (scheme) {
    const s = scheme[1].toLowerCase();
    return s === 'http' || s === 'https' ? u : null;
  }
  // Without a scheme a colon before any /, ? or # would still read as one.
  const first = u.search(/[/?#]/);
  const head = first < 0 ? u : u.slice(0, first);
  return head.includes(':') ? null : u;
}

function el(tag, text) {
  const n = document.createElement(tag);
  if (text !== undefined) n.textContent = text;
  return n;
}

// render returns a DocumentFragment for the Markdown source. resolve maps
// a relative link target to the href to use (or null to leave it as
// text).
export function render(source, resolve) {
  const out = document.createDocumentFragment();
  const lines = stripFrontMatter(String(source).replace(/\r\n?/g, '\n')).split('\n');
  blocks(lines, out, resolve || ((u) => u), 0);
  return out;
}

function stripFrontMatter(s) {
  if (!s.startsWith('---\n')) return s;
  const end = s.indexOf('\n---', 4);
  if (end < 0) return s;
  const after = s.indexOf('\n', end + 4);
  return after < 0 ? '' : s.slice(after + 1);
}

const listItem = /^(\s{0,3})([-*+]|\d{1,9}[.)])\s+(.*)$/;

function blocks(lines, parent, resolve, depth) {
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) {
      const p = el('p');
      inline(para.join('\n'), p, resolve);
      parent.appendChild(p);
      para = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) {
      flush();
      i++;
    } else if ((m = /^\s{0,3}(`{3,}|~{3,})\s*([^`\s]*)/.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence)) body.push(lines[i++]);
      i++;
      const pre = el('pre');
      const code = el('code', body.join('\n'));
      if (m[2]) code.dataset.language = m[2];
      pre.appendChild(code);
      parent.appendChild(pre);
    } else if ((m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      flush();
      // The page's own h1 names the skill: a SKILL.md's headings start at h2.
      const h = el('h' + Math.min(6, m[1].length + 1));
      inline(m[2], h, resolve);
      parent.appendChild(h);
      i++;
    } else if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      parent.appendChild(el('hr'));
      i++;
    } else if (/^\s{0,3}>/.test(line)) {
      flush();
      const inner = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) inner.push(lines[i++].replace(/^\s{0,3}>\s?/, ''));
      const q = el('blockquote');
      if (depth < 8) blocks(inner, q, resolve, depth + 1);
      else q.textContent = inner.join('\n');
      parent.appendChild(q);
    } else if ((m = listItem.exec(line)) && (para.length === 0 || depth >= 0)) {
      flush();
      const ordered = /\d/.test(m[2]);
      const list = el(ordered ? 'ol' : 'ul');
      if (ordered && parseInt(m[2], 10) !== 1) list.start = parseInt(m[2], 10);
      while (i < lines.length && (m = listItem.exec(lines[i])) && /\d/.test(m[2]) === ordered) {
        const item = [m[3]];
        const indent = m[1].length + m[2].length + 1;
        i++;
        while (i < lines.length && !listItem.exec(lines[i]) && (/^\s+\S/.test(lines[i]) || (lines[i].trim() === '' && i + 1 < lines.length && /^\s+\S/.test(lines[i + 1])))) {
          item.push(lines[i].slice(Math.min(indent, lines[i].length - lines[i].trimStart().length)));
          i++;
        }
        const li = el('li');
        if (item.length === 1 || depth >= 8) inline(item.join('\n'), li, resolve);
        else blocks(item, li, resolve, depth + 1);
        list.appendChild(li);
      }
      parent.appendChild(list);
    } else if (/^ {4}/.test(line) && para.length === 0) {
      const body = [];
      while (i < lines.length && (/^ {4}/.test(lines[i]) || lines[i].trim() === '')) body.push(lines[i++].slice(4));
      while (body.length && body[body.length - 1].trim() === '') body.pop();
      const pre = el('pre');
      pre.appendChild(el('code', body.join('\n')));
      parent.appendChild(pre);
    } else {
      para.push(line.trim());
      i++;
    }
  }
  flush();
}

// inline appends the inline content of text to parent.
function inline(text, parent, resolve, depth = 0) {
  let i = 0;
  let plain = '';
  const push = () => {
    if (plain) parent.appendChild(document.createTextNode(plain));
    plain = '';
  };
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i);
    let m;
    if (c === '\\' && i + 1 < text.length && /[\\`*_[\]()#+\-.!<>]/.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
    } else if (c === '`' && (m = /^(`+)([\s\S]*?[^`])\1(?!`)/.exec(rest))) {
      push();
      parent.appendChild(el('code', m[2].trim()));
      i += m[0].length;
    } else if (depth < 8 && (c === '*' || c === '_') && (m = /^(\*\*|__)(?=\S)([\s\S]*?\S)\1/.exec(rest))) {
      push();
      const s = el('strong');
      inline(m[2], s, resolve, depth + 1);
      parent.appendChild(s);
      i += m[0].length;
    } else if (depth < 8 && (c === '*' || c === '_') && (m = /^([*_])(?=\S)([\s\S]*?\S)\1(?![*_])/.exec(rest))) {
      push();
      const e = el('em');
      inline(m[2], e, resolve, depth + 1);
      parent.appendChild(e);
      i += m[0].length;
    } else if ((c === '[' || (c === '!' && text[i + 1] === '[')) && (m = /^!?\[([^\]]*)\]\(\s*<?([^\s)>]*)>?(?:\s+"[^"]*")?\s*\)/.exec(rest))) {
      push();
      const image = c === '!';
      const label = m[1] || m[2];
      parent.appendChild(link(m[2], image ? 'image: ' + label : label, resolve, depth));
      i += m[0].length;
    } else if (c === '<' && (m = /^<(https?:\/\/[^\s<>]+)>/i.exec(rest))) {
      push();
      parent.appendChild(link(m[1], m[1], resolve, depth));
      i += m[0].length;
    } else if (c === '\n') {
      plain += ' ';
      i++;
    } else {
      plain += c;
      i++;
    }
  }
  push();
}

function link(target, label, resolve, depth) {
  let href = safeHref(target);
  if (href !== null && !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(href) && !href.startsWith('//')) href = resolve(href);
  if (href === null) {
    // Refused: the text stays, with the target shown so nothing is hidden.
    return el('span', label === target ? label : label + ' (' + target + ')');
  }
  const a = el('a');
  inline(label, a, () => null, depth + 1);
  a.href = href;
  if (/^(https?:)?\/\//i.test(href)) a.rel = 'noopener noreferrer nofollow';
  return a;
}
