// The Faultline portal: a page that reads the JSON API (docs/http-api.md)
// with the admin token.  The token stays in this tab (sessionStorage) and
// goes out only as the Authorization header of API calls, so there is no
// cookie to forge requests with.  Every value from the server reaches the
// page through textContent or attributes, never as markup: crash logs are
// written by whoever can reach the ingest port.
'use strict';

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem('faultline-token') || '';

// el('td', {class: 'num'}, 'text', child...) -> element
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v !== null && v !== undefined) e.setAttribute(k, v);
  for (const k of kids)
    if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

async function api(path, options) {
  const r = await fetch(path, Object.assign({}, options,
    {headers: Object.assign({Authorization: 'Bearer ' + token}, (options || {}).headers)}));
  if (r.status === 401) {
    logout('The admin token was refused.');
    throw new Error('unauthorized');
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok)
    throw new Error(body.error || ('HTTP ' + r.status));
  return body;
}

function logout(message) {
  token = '';
  sessionStorage.removeItem('faultline-token');
  show(message);
}

function status(s) {
  return el('span', {class: 'status status-' + s}, s);
}

function day(iso) {
  return iso ? iso.replace('T', ' ').replace('Z', ' UTC') : '';
}

function table(head, rows) {
  const t = el('table', {}, el('thead', {}, el('tr', {}, ...head.map(
    (h) => el('th', {class: h.endsWith('#') ? 'num' : null}, h.replace(/#$/, ''))))));
  const b = el('tbody');
  for (const r of rows)
    b.append(el('tr', {}, ...r.map((c) => c instanceof Node && c.tagName === 'TD' ? c : el('td', {}, c))));
  t.append(b);
  return t;
}

function num(n) {
  return el('td', {class: 'num'}, n);
}

// ---- views

async function groups(view, params) {
  const q = new URLSearchParams();
  if (params.get('app')) q.set('app', params.get('app'));
  if (params.get('status')) q.set('status', params.get('status'));
  q.set('limit', '200');
  const data = await api('/api/v1/groups?' + q);
  const app = el('input', {id: 'f-app', placeholder: 'application', value: params.get('app') || ''});
  const st = el('select', {id: 'f-status'}, ...['', 'open', 'resolved', 'regressed'].map(
    (s) => el('option', {value: s}, s || 'any status')));
  st.value = params.get('status') || '';
  const apply = () => {
    const p = new URLSearchParams();
    if (app.value) p.set('app', app.value);
    if (st.value) p.set('status', st.value);
    location.hash = '#/?' + p;
  };
  app.addEventListener('change', apply);
  st.addEventListener('change', apply);
  view.append(el('h1', {}, 'Crash groups'),
    el('div', {class: 'filters'}, app, st,
      el('span', {class: 'muted', id: 'group-total'}, data.groups.length + ' groups')));
  if (!data.groups.length) {
    view.append(el('p', {class: 'muted'}, 'No crashes yet.'));
    return;
  }
  view.append(table(['Crashes#', 'Signature', 'Application', 'Latest version', 'Installations#',
                     'Status', 'First seen', 'Last seen'],
    data.groups.map((g) => [num(g.count),
      el('a', {href: '#/group/' + encodeURIComponent(g.id), class: 'mono group-link'}, g.signature),
      g.app, g.latest_version || '', num(g.affected), status(g.status), day(g.first_seen),
      day(g.last_seen)])));
}

// Per-day counts as bars, one per day from the first to the last.
function chart(days) {
  const ns = 'http://www.w3.org/2000/svg';
  const w = 720, h = 120, pad = 20;
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'chart');
  svg.setAttribute('width', w);
  svg.setAttribute('height', h + pad);
  svg.setAttribute('role', 'img');
  if (!days.length)
    return svg;
  // At least the last 30 days, so that one busy day is not a wall.
  const last = Date.parse(days[days.length - 1].day);
  const n = Math.max(30, Math.round((last - Date.parse(days[0].day)) / 86400000) + 1);
  const first = last - (n - 1) * 86400000;
  const max = Math.max(...days.map((d) => d.count));
  const bw = Math.max(2, Math.floor((w - 10) / Math.max(n, 1)) - 1);
  for (const d of days) {
    const i = Math.round((Date.parse(d.day) - first) / 86400000);
    const bh = Math.max(1, Math.round(d.count / max * (h - 10)));
    const r = document.createElementNS(ns, 'rect');
    r.setAttribute('x', 5 + i * (bw + 1));
    r.setAttribute('y', h - bh);
    r.setAttribute('width', bw);
    r.setAttribute('height', bh);
    const t = document.createElementNS(ns, 'title');
    t.textContent = d.day + ': ' + d.count;
    r.append(t);
    svg.append(r);
  }
  const label = document.createElementNS(ns, 'text');
  label.setAttribute('x', 5);
  label.setAttribute('y', h + 15);
  label.setAttribute('font-size', '11');
  label.textContent = new Date(first).toISOString().slice(0, 10) + ' – ' +
    days[days.length - 1].day + ' (at most ' + max + ' a day)';
  svg.append(label);
  return svg;
}

function frames(list) {
  return table(['#', 'Function', 'File', 'Module', 'Address'], list.map((f, i) => [
    String(i) + (f.inlined ? ' (inlined)' : ''),
    el('span', {class: 'mono'}, f.function || f.name || ''),
    f.file ? f.file + ':' + (f.line || '') : '',
    f.module || '', el('span', {class: 'mono'}, f.address || '')]));
}

async function group(view, id) {
  const g = await api('/api/v1/groups/' + encodeURIComponent(id));
  const set = async (s) => {
    await api('/api/v1/groups/' + encodeURIComponent(id), {method: 'PATCH',
      body: JSON.stringify({status: s})});
    route();
  };
  const action = g.status === 'resolved'
    ? el('button', {class: 'action', id: 'reopen'}, 'Reopen')
    : el('button', {class: 'action', id: 'resolve'}, 'Resolve');
  action.addEventListener('click', () => set(g.status === 'resolved' ? 'open' : 'resolved'));
  view.append(el('h1', {class: 'mono', id: 'signature'}, g.signature),
    el('div', {class: 'stats'},
      el('div', {}, el('span', {}, 'crashes'), el('b', {id: 'count'}, g.count)),
      el('div', {}, el('span', {}, 'installations'), el('b', {}, g.affected)),
      el('div', {}, el('span', {}, 'application'), g.app),
      el('div', {}, el('span', {}, 'status'), el('b', {id: 'status'}, status(g.status)),
        g.resolved_in ? ' in ' + g.resolved_in : ''),
      el('div', {}, el('span', {}, 'first seen'), day(g.first_seen)),
      el('div', {}, el('span', {}, 'last seen'), day(g.last_seen)),
      el('div', {}, action)),
    el('h2', {}, 'Crashes per day'), chart(g.days || []),
    el('div', {class: 'cols'},
      el('div', {}, el('h2', {}, 'Versions'),
        table(['Version', 'Crashes#'], (g.versions || []).map((v) => [v.version, num(v.count)]))),
      el('div', {}, el('h2', {}, 'Operating systems'),
        table(['OS', 'Crashes#'], (g.os || []).map((o) => [o.os, num(o.count)])))),
    el('h2', {}, 'Stack of a representative crash'), frames(g.frames || []),
    el('h2', {}, 'Recent crashes'),
    el('ul', {}, ...(g.sample_crashes || []).map((c) =>
      el('li', {}, el('a', {href: '#/crash/' + encodeURIComponent(c), class: 'mono crash-link'}, c)))));
}

async function crash(view, id) {
  const c = await api('/api/v1/crashes/' + encodeURIComponent(id));
  const m = c.metadata || {};
  view.append(el('h1', {id: 'crash-title'}, 'Crash ', el('span', {class: 'mono'}, c.id)),
    el('div', {class: 'stats'},
      el('div', {}, el('span', {}, 'application'), (c.app || '') + ' ' + (c.version || '')),
      el('div', {}, el('span', {}, 'state'), c.state),
      el('div', {}, el('span', {}, 'received'), day(c.received)),
      el('div', {}, el('span', {}, 'signal'), m.signal_name || m.signal || ''),
      el('div', {}, el('span', {}, 'OS'), m.os_pretty_name || m.platform || ''),
      c.group_id ? el('div', {}, el('span', {}, 'group'),
        el('a', {href: '#/group/' + encodeURIComponent(c.group_id)}, 'open the group')) : null));
  for (const t of c.threads || []) {
    view.append(el('h2', {}, (t.crashed ? 'Crashed thread ' : 'Thread ') + (t.tid || '') +
      (t.name ? ' (' + t.name + ')' : '') + (t.context ? ' — context ' + t.context : '')),
      frames(t.frames || []));
  }
  if ((c.trace || []).length)
    view.append(el('h2', {}, 'Trace events'), table(['Time', 'Thread', 'Event', 'Context'],
      c.trace.map((e) => [String(e.time_ns), String(e.tid), e.text, e.context || ''])));
  if ((c.breadcrumbs || []).length)
    view.append(el('h2', {}, 'Breadcrumbs'), table(['Time (ms)', 'Category', 'Message'],
      c.breadcrumbs.map((b) => [String(b.time_ms), b.category, b.message])));
}

async function symbols(view) {
  const s = await api('/api/v1/symbols');
  const files = s.symbols || s.files || [];
  view.append(el('h1', {}, 'Symbol files'), files.length
    ? table(['Build id', 'File', 'Status', 'Error'], files.map((f) => [
        el('span', {class: 'mono'}, f.build_id || ''), f.name || f.file || '', f.status || '',
        f.error || '']))
    : el('p', {class: 'muted'}, 'No symbol files yet: faultline symbols add FILE... --server URL'));
}

// ---- routing

async function route() {
  const view = $('view');
  view.replaceChildren();
  if (!token)
    return show();
  const [path, query] = (location.hash.slice(1) || '/').split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  try {
    if (parts[0] === 'group' && parts[1])
      await group(view, parts[1]);
    else if (parts[0] === 'crash' && parts[1])
      await crash(view, parts[1]);
    else if (parts[0] === 'symbols')
      await symbols(view);
    else
      await groups(view, params);
  } catch (e) {
    if (e.message !== 'unauthorized')
      view.append(el('p', {class: 'error', role: 'alert'}, 'Could not load this page: ' + e.message));
  }
}

function show(message) {
  const loggedIn = !!token;
  $('login').hidden = loggedIn;
  $('nav').hidden = !loggedIn;
  $('login-error').textContent = message || '';
  if (loggedIn)
    route();
  else
    $('view').replaceChildren();
}

document.addEventListener('DOMContentLoaded', () => {
  $('login').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    token = $('token').value.trim();
    const r = await fetch('/api/v1/groups?limit=1', {headers: {Authorization: 'Bearer ' + token}});
    if (r.status !== 200) {
      token = '';
      $('login-error').textContent = r.status === 401 ? 'Wrong admin token.' : 'The server answered ' + r.status + '.';
      return;
    }
    sessionStorage.setItem('faultline-token', token);
    $('token').value = '';
    show();
  });
  $('logout').addEventListener('click', () => logout());
  window.addEventListener('hashchange', route);
  show();
});
