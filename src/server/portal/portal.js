// The Faultline portal: a page that reads the JSON API (docs/http-api.md)
// with the admin token.  The token stays in this tab (sessionStorage) and
// goes out only as the Authorization header of API calls, so there is no
// cookie to forge requests with.  Every value from the server reaches the
// page through textContent or attributes, never as markup: crash logs are
// written by whoever can reach the ingest port.
'use strict';

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem('faultline-token') || '';
// What an action that left its page did, said once on the next one (a
// group deleted: the list says so, with how many crashes went).
let flash = '';

// Unicode's direction controls (the embeddings and overrides U+202A-E,
// the isolates U+2066-9, the marks U+200E, U+200F, U+061C) in a value
// would turn the text after them around, the page's own included: one
// U+202E in a module's name read a signature's frames backwards across
// their " | ".  They are shown by their code point instead.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
function visible(s) {
  return String(s).replace(BIDI, (c) =>
    '\u27e8U+' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') + '\u27e9');
}

// el('td', {class: 'num'}, 'text', child...) -> element; text through visible().
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v !== null && v !== undefined) e.setAttribute(k, v);
  for (const k of kids)
    if (k !== null && k !== undefined) e.append(k instanceof Node ? k : visible(k));
  return e;
}

// The minidump a crash was made from, as its client sent it (the server
// keeps those it was sent -- minidump_bytes says so --, not one that
// `faultline minidump` turned into a log on the client's machine): fetched
// with the token and saved as ID.dmp.
function minidumpButton(id, bytes) {
  const size = bytes < 10240 ? bytes + ' bytes' : Math.round(bytes / 1024) + ' KiB';
  const b = el('button', {class: 'action', id: 'crash-minidump'},
    'Download the minidump (' + size + ')');
  const said = el('span', {id: 'crash-minidump-result', role: 'status'});
  b.addEventListener('click', async () => {
    b.disabled = true;
    said.textContent = '';
    try {
      const r = await request('/api/v1/crashes/' + encodeURIComponent(id) + '/minidump');
      if (r.status === 401) {
        logout('The admin token was refused.');
        return;
      }
      if (!r.ok) {
        const body = await r.json().catch(() => ({}));
        throw new Error(body.error || ('HTTP ' + r.status));
      }
      const href = URL.createObjectURL(await r.blob());
      const a = el('a', {href, download: id + '.dmp'});
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(href), 60000);
    } catch (e) {
      said.textContent = ' ' + e.message;
    } finally {
      b.disabled = false;
    }
  });
  return el('span', {}, ' ', b, said);
}

// fetch() with the token; a server that does not answer (stopped, the
// network gone) is said in words, not as fetch's "Failed to fetch".
async function request(path, options) {
  try {
    return await fetch(path, Object.assign({}, options,
      {headers: Object.assign({Authorization: 'Bearer ' + token}, (options || {}).headers)}));
  } catch (e) {
    throw new Error('the server did not answer (' + e.message + ')');
  }
}

async function api(path, options) {
  const r = await request(path, options);
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

// The time of day (UTC) of a trace event (ns) or a breadcrumb (ms) since
// the epoch, to the microsecond or millisecond.  Past 2^53 ns a Number
// keeps ~0.25 us, finer than what is shown.
function clock(t, perMs) {
  const d = new Date(Math.floor(Number(t) / perMs));
  if (isNaN(d.getTime())) return String(t);
  const hms = d.toISOString().slice(11, 23);
  return perMs === 1 ? hms : hms + String(Math.floor(Number(t) / 1e3) % 1000).padStart(3, '0');
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
  for (const k of ['app', 'version', 'status', 'project', 'q', 'sort', 'install'])
      if (params.get(k))
          q.set(k, params.get(k));
  // A page at a time; the hash keeps the page (and a page size, ?limit=).
  const limit = Math.min(Math.max(parseInt(params.get('limit') || '100', 10) || 100, 1), 1000);
  const offset = Math.max(parseInt(params.get('offset') || '0', 10) || 0, 0);
  // One more than a page: whether there is a next page, so that "next"
  // never leads to an empty one.
  q.set('limit', String(limit + 1));
  q.set('offset', String(offset));
  // The projects for the filter; without them (a store that cannot list
  // them) the groups still show.
  // The applications, for the filter's suggestions: the trends answer
  // lists them (a day's, the least it counts); without it the filter is
  // still typed.
  const [data, prj, known] = await Promise.all([api('/api/v1/groups?' + q),
    api('/api/v1/projects').catch(() => ({projects: []})),
    api('/api/v1/trends?days=1').catch(() => ({apps: []}))]);
  const more = data.groups.length > limit;
  data.groups = data.groups.slice(0, limit);
  const projects = (prj.projects || []).map((p) => p.id);
  // The filters have no visible label: their names are for screen readers.
  // An exact name, so the names the server knows are offered as one types.
  const app = el('input', {id: 'f-app', 'aria-label': 'Application', placeholder: 'application',
    list: 'f-apps', autocomplete: 'off', value: params.get('app') || ''});
  const apps = el('datalist', {id: 'f-apps'},
    ...(known.apps || []).map((a) => el('option', {value: a, label: visible(a)})));
  // Groups with crashes of this version (of any application, or the one
  // above).
  const ver = el('input', {id: 'f-version', 'aria-label': 'Version', placeholder: 'version',
    value: params.get('version') || ''});
  const st = el('select', {id : 'f-status', 'aria-label' : 'Status'},
                ...['', 'open', 'resolved', 'regressed', 'ignored'].map(
                    (s) => el('option', {value : s}, s || 'any status')));
  st.value = params.get('status') || '';
  // Groups of one project (every ingest key belongs to one).
  const want = params.get('project') || '';
  const pr = el('select', {id: 'f-project', 'aria-label': 'Project'}, el('option', {value: ''}, 'all projects'),
    ...projects.map((p) => el('option', {value: p}, p)),
    want && !projects.includes(want) ? el('option', {value: want}, want) : null);
  pr.value = want;
  // Part of a signature: a function or module name, any case.
  const find = el('input', {
      id : 'f-q',
      'aria-label' : 'Signature contains',
      placeholder : 'function or module',
      value : params.get('q') || ''
  });
  const sort = el('select', {id : 'f-sort', 'aria-label' : 'Order'},
                  el('option', {value : ''}, 'most crashes'),
                  el('option', {value : 'last_seen'}, 'latest crash'),
                  el('option', {value : 'first_seen'}, 'newest group'));
  sort.value = params.get('sort') || '';
  // The groups one installation crashed in (a user's support request).
  const inst = el('input', {
      id : 'f-install',
      'aria-label' : 'Installation',
      placeholder : 'installation',
      value : params.get('install') || ''
  });
  const apply = () => {
    const p = new URLSearchParams();
    if (app.value) p.set('app', app.value);
    if (ver.value) p.set('version', ver.value);
    if (st.value) p.set('status', st.value);
    if (pr.value) p.set('project', pr.value);
    if (find.value.trim())
        p.set('q', find.value.trim());
    if (sort.value)
        p.set('sort', sort.value);
    if (inst.value.trim())
        p.set('install', inst.value.trim());
    // A new filter starts at the first page, of the same size.
    if (params.get('limit')) p.set('limit', params.get('limit'));
    location.hash = '#/?' + p;
  };
  app.addEventListener('change', apply);
  ver.addEventListener('change', apply);
  st.addEventListener('change', apply);
  pr.addEventListener('change', apply);
  find.addEventListener('change', apply);
  sort.addEventListener('change', apply);
  inst.addEventListener('change', apply);
  const page = (o) => {
    const p = new URLSearchParams(params);
    p.set('offset', String(Math.max(o, 0)));
    return '#/?' + p;
  };
  const shown = data.groups.length ? (offset + 1) + '–' + (offset + data.groups.length) : '0';
  const said0 = flash;
  flash = '';
  view.append(
      el('h1', {}, 'Crash groups'),
      said0 ? el('p', {id : 'flash', role : 'status'}, said0) : '',
      el('div', {class : 'filters'}, app, apps, ver, st, pr, find, sort, inst,
         el('span', {class : 'muted', id : 'group-total'},
            'groups ' + shown + (data.total !== undefined ? ' of ' + data.total : '')),
         offset > 0 ? el('a', {href : page(offset - limit), id : 'prev'}, '← previous') : null,
         more ? el('a', {href : page(offset + limit), id : 'next'}, 'next →') : null));
  if (!data.groups.length) {
      view.append(el('p', {class : 'muted'},
                     offset ? 'No more groups.'
                     : params.get('install') || params.get('q') || params.get('app') ||
                             params.get('version') || params.get('status') || params.get('project')
                         ? 'No group matches these filters.'
                         : 'No crashes yet.'));
      return;
  }
  // A Project column once there is more than the default project.
  const many = projects.length > 1;
  // Groups ticked are merged into the one of them with the most crashes
  // (two signatures of one bug: the same application's only).
  const picked = new Set();
  const merge = el('button', {class : 'action', id : 'merge', disabled : ''}, 'Merge selected');
  const said = el('span', {id : 'merge-error', class : 'error', role : 'alert'});
  const tick = (g) => {
      const box =
          el('input', {type : 'checkbox', class : 'pick', 'aria-label' : 'Select ' + g.signature});
      box.addEventListener('change', () => {
          if (box.checked)
              picked.add(g);
          else
              picked.delete(g);
          merge.disabled = picked.size < 2;
      });
      return el('td', {}, box);
  };
  merge.addEventListener('click', async () => {
      const list = [...picked ].sort((a, b) => b.count - a.count);
      const into = list[0];
      // Only groups of one project and application merge (the server
      // refuses the others): said before asking, by name.
      const other = list.find((g) => g.app !== into.app || (g.project || '') !== (into.project || ''));
      if (other) {
          said.textContent = ' Not merged: "' + visible(other.signature) + '" is of ' +
                             visible(other.app) + (other.project ? ' (' + visible(other.project) + ')' : '') +
                             ', "' + visible(into.signature) + '" of ' + visible(into.app) +
                             (into.project ? ' (' + visible(into.project) + ')' : '') +
                             ': only groups of one project and application merge.';
          return;
      }
      if (!confirm('Merge ' + (list.length - 1) + ' group' + (list.length > 2 ? 's' : '') +
                   ' into "' + visible(into.signature) +
                   '"? Their crashes, and the later ones of their signatures, count there.'))
          return;
      merge.disabled = true;
      said.textContent = '';
      try {
          await api(
              '/api/v1/groups/' + encodeURIComponent(into.id) + '/merge',
              {method : 'POST', body : JSON.stringify({groups : list.slice(1).map((g) => g.id)})});
      } catch (e) {
          if (e.message !== 'unauthorized')
              said.textContent = ' Not merged: ' + e.message;
          merge.disabled = false;
          return;
      }
      location.hash = '#/group/' + encodeURIComponent(into.id);
  });
  view.append(el('div', {class : 'filters'}, merge, said));
  view
      .append(
          table(
              [
                  '', 'Crashes#', 'Signature', ...(many ? [ 'Project' ] : []), 'Application',
                  'Latest version', 'Installations#', 'Status', 'First seen', 'Last seen'
              ],
              data.groups.map(
                  (
                      g) => [tick(g), num(g.count),
                             el('a',
                                {
                                    href : '#/group/' + encodeURIComponent(g.id) +
                                               (params.get('install') ? '?install=' + encodeURIComponent(params
                                                                                                             .get(
                                                                                                                 'install'))
                                                                      : ''),
                                    class : 'mono group-link'
                                },
                                g.signature),
                             ...(many ? [ g.project || '' ] : []), g.app, g.latest_version || '',
                             num(g.affected), status(g.status), day(g.first_seen),
                             day(g.last_seen)])));
}

// Charts: an SVG of width w with a plot h high and a caption below.
const SVG = 'http://www.w3.org/2000/svg';

function svgBox(cls, w, h) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', cls);
  svg.setAttribute('width', w);
  svg.setAttribute('height', h + 20);
  svg.setAttribute('role', 'img');
  return svg;
}

// A bar with tip as its tooltip (a <title>) and more attributes.
function svgBar(svg, x, y, width, height, tip, more) {
  const r = document.createElementNS(SVG, 'rect');
  for (const [k, v] of Object.entries(Object.assign({x, y, width, height}, more || {})))
    r.setAttribute(k, v);
  const t = document.createElementNS(SVG, 'title');
  t.textContent = visible(tip);
  r.append(t);
  svg.append(r);
}

function svgText(svg, x, y, text, more) {
  const t = document.createElementNS(SVG, 'text');
  for (const [k, v] of Object.entries(Object.assign({x, y, 'font-size': '11'}, more || {})))
    t.setAttribute(k, v);
  t.textContent = visible(text);
  svg.append(t);
}

// The caption under a chart; with the chart's name (its heading says it
// on the page), what a screen reader says of it.
function svgCaption(svg, h, text, name) {
  svgText(svg, AXIS, h + 15, text, {class: 'caption'});
  svg.setAttribute('aria-label', visible(name + ', ' + text));
}

// Bars start right of the scale's numbers.
const AXIS = 34;

// The scale: the baseline, 0, and a line at the highest bar's top with
// its count (bars are scaled to h - 10).
function svgScale(svg, w, h, max) {
  for (const [y, n] of max ? [[h, 0], [10, max]] : [[h, 0]]) {
    const l = document.createElementNS(SVG, 'line');
    for (const [k, v] of Object.entries({x1: AXIS - 2, x2: w - 5, y1: y, y2: y, class: 'scale'}))
      l.setAttribute(k, v);
    svg.append(l);
    svgText(svg, AXIS - 5, y + 4, String(n), {'text-anchor': 'end', class: 'scale'});
  }
}

// Per-day counts as bars, one per day from the first to the last.
function chart(days) {
  const w = 720, h = 120;
  const svg = svgBox('chart', w, h);
  if (!days.length) {
    svg.setAttribute('aria-label', 'Crashes per day: none');
    return svg;
  }
  // At least the last 30 days, so that one busy day is not a wall.
  const last = Date.parse(days[days.length - 1].day);
  const n = Math.max(30, Math.round((last - Date.parse(days[0].day)) / 86400000) + 1);
  const first = last - (n - 1) * 86400000;
  const max = Math.max(...days.map((d) => d.count));
  const bw = Math.max(2, Math.floor((w - AXIS - 5) / Math.max(n, 1)) - 1);
  svgScale(svg, w, h, max);
  for (const d of days) {
    const i = Math.round((Date.parse(d.day) - first) / 86400000);
    const bh = Math.max(1, Math.round(d.count / max * (h - 10)));
    svgBar(svg, AXIS + i * (bw + 1), h - bh, bw, bh, d.day + ': ' + d.count);
  }
  svgCaption(svg, h, new Date(first).toISOString().slice(0, 10) + ' – ' +
    days[days.length - 1].day + ' (at most ' + max + ' a day)', 'Crashes per day');
  return svg;
}

// What a crash log was made from, when not by libfaultline (its
// CRASH_SOURCE), as the crash page says it.
const SOURCES = Object.freeze(
    Object.assign(Object.create(null), {core : 'from a core dump', minidump : 'from a minidump'}));

// A stack.  With src ({id, thread}: a crash's own thread, stack()), a
// frame with an absolute file and a line can show the lines around it
// (fileCell).
function frames(list, src)
{
    return table([ '#', 'Function', 'File', 'Module', 'Address' ],
                 list.map((f, i) => [String(i) + (f.inlined ? ' (inlined)' : '') +
                                         (f.tail_call ? ' (tail call)' : ''),
                                     el('span', {class : 'mono'}, f.function || f.name || ''),
                                     fileCell(f, i, src), f.module || '',
                                     // A frame put back by its function alone: the
                                     // address is the function's entry, not where it was.
                                     el('span', {class : 'mono'},
                                        (f.address || '') + (f.at_entry ? ' (entry)' : ''))]));
}

// Thread ti of crash c (GET /api/v1/crashes/ID) as a stack whose frames
// can show their source lines: the source endpoint names a frame by the
// crash, the thread's index in its threads and the frame's in its frames,
// so the list shown and the indexes asked are that crash's own.
function stack(c, ti)
{
    return frames(c.threads[ti].frames || [], {id : c.id, thread : ti});
}

// The File cell of frame i: file:line, a button that shows the source
// lines (GET /api/v1/crashes/ID/source) in a row below when it can.
function fileCell(f, i, src)
{
    if (!f.file)
        return '';
    if (!src || !f.line || !f.file.startsWith('/'))
        return f.file + ':' + (f.line || '');
    const title = 'show the source lines around this line';
    const b = el('button', {class : 'src-toggle', type : 'button', 'data-frame' : i, title : title},
                 f.file + ':' + f.line);
    b.setAttribute('aria-expanded', 'false');
    b.addEventListener('click', () => source(b, src));
    return el('td', {}, b);
}

// Shows (or hides again) the source lines of the frame of button b, in a
// row after the frame's.  Each line is text, its number apart, the
// frame's own line marked.
async function source(b, src)
{
    const row = b.closest('tr');
    let box = row.nextElementSibling;
    if (box && box.classList.contains('src-row')) {
        box.hidden = !box.hidden;
        b.setAttribute('aria-expanded', String(!box.hidden));
        return;
    }
    const cell = el('td', {colspan : '5'}, el('p', {class : 'muted'}, 'Loading…'));
    box = el('tr', {class : 'src-row', 'data-frame' : b.dataset.frame}, cell);
    row.after(box);
    b.setAttribute('aria-expanded', 'true');
    try {
        const r = await api('/api/v1/crashes/' + encodeURIComponent(src.id) +
                            '/source?thread=' + src.thread + '&frame=' + b.dataset.frame);
        const lines =
            el('div', {class : 'source', role : 'region', 'aria-label' : r.path + ':' + r.line});
        (r.lines || []).forEach((text, i) => {
            const n = r.first + i;
            lines.append(el('div',
                            n === r.line ? {class : 'src-line src-hit', 'aria-current' : 'true'}
                                         : {class : 'src-line'},
                            el('span', {class : 'src-no'}, String(n)), el('code', {}, text)));
        });
        cell.replaceChildren(lines);
    } catch (e) {
        cell.replaceChildren(el('p', {class : 'error'}, 'No source: ' + e.message));
    }
}

const CRASHES_PAGE = 20;

async function group(view, id, params)
{
    // The group, and a page of its crashes (newest first; ?offset= in the
    // hash pages through them).
    // ?install= shows one installation's crashes only.
    const offset = Math.max(parseInt(params.get('offset') || '0', 10) || 0, 0);
    const inst = params.get('install') || '';
    const only = inst ? '&install=' + encodeURIComponent(inst) : '';
    const [g, list] = await Promise.all([
        api('/api/v1/groups/' + encodeURIComponent(id)),
        api('/api/v1/groups/' + encodeURIComponent(id) + '/crashes?limit=' + CRASHES_PAGE +
            '&offset=' + offset + only)
    ]);
    const crashes = list.crashes || [];
    // What the program said as it died, in the crash that made the group:
    // an uncaught C++ exception, or the C library's abort message.  A
    // crash removed since (retention) says nothing.
    const first = g.representative_crash
                      ? await api('/api/v1/crashes/' + encodeURIComponent(g.representative_crash))
                            .catch(() => null)
                      : null;
    // Its crashing thread (threads[0] as the server writes it, marked
    // crashed), whose frames can show their source lines; -1 when the
    // crash is gone (deleted, removed by the retention), did not load, is
    // not processed, or has no frames.
    const crashed =
        first ? (first.threads || []).findIndex((t) => t.crashed && (t.frames || []).length) : -1;
    const fm = (first && first.metadata) || {};
    const last = fm.exception ? fm.exception.type +
                                    (fm.exception.message ? ': ' + fm.exception.message : '')
                              : fm.abort_message || '';
    const at = (o) => '#/group/' + encodeURIComponent(id) + '?offset=' + Math.max(o, 0) + only;
    const action = g.status === 'resolved' || g.status === 'ignored'
                       ? el('button', {class : 'action', id : 'reopen'}, 'Reopen')
                       : el('button', {class : 'action', id : 'resolve'}, 'Resolve');
    // Noise (a known third-party bug): kept and counted, never regressed
    // or notified.
    const ignore =
        g.status === 'ignored' ? null : el('button', {class : 'action', id : 'ignore'}, 'Ignore');
    // A change the server did not make is said beside the button.
    const said = el('span', {id : 'status-error', class : 'error', role : 'alert'});
    const set = async (s) => {
        action.disabled = true;
        if (ignore)
            ignore.disabled = true;
        said.textContent = '';
        try {
            await api('/api/v1/groups/' + encodeURIComponent(id),
                      {method : 'PATCH', body : JSON.stringify({status : s})});
        } catch (e) {
            if (e.message !== 'unauthorized')
                said.textContent = ' Not changed: ' + e.message;
            action.disabled = false;
            if (ignore)
                ignore.disabled = false;
            return;
        }
        route();
    };
    action.addEventListener(
        'click',
        () => set(g.status === 'resolved' || g.status === 'ignored' ? 'open' : 'resolved'));
    if (ignore)
        ignore.addEventListener('click', () => set('ignored'));
    // A group merged into this one by mistake: its crashes are processed
    // again, and go back to it as they are.
    const unsaid = el('span', {id : 'unmerge-error', class : 'error', role : 'alert'});
    const unmerge = (m) => {
        const b = el('button', {class : 'action unmerge'}, 'Unmerge');
        b.addEventListener('click', async () => {
            if (!confirm('Unmerge "' + visible(m.signature) +
                         '"? Its crashes and counts go back to their own group.'))
                return;
            b.disabled = true;
            unsaid.textContent = '';
            try {
                await api('/api/v1/groups/' + encodeURIComponent(m.id) + '/unmerge',
                          {method : 'POST'});
            } catch (e) {
                if (e.message !== 'unauthorized')
                    unsaid.textContent = ' Not unmerged: ' + e.message;
                b.disabled = false;
                return;
            }
            route();
        });
        return b;
    };
    // Delete the whole group (junk from a developer's machine, logs with
    // personal data): every crash kept of it and of the groups merged into
    // it is erased; the confirmation says how many.  Then the list.
    const gdel = el('button', {class : 'action', id : 'delete-group'}, 'Delete group');
    const gdelSaid = el('span', {id : 'delete-group-error', class : 'error', role : 'alert'});
    gdel.addEventListener('click', async () => {
        // The list above may be one installation's: the count said is
        // the whole group's.
        let kept = list.total || 0;
        if (inst) {
            try {
                kept = (await api('/api/v1/groups/' + encodeURIComponent(g.id) + '/crashes?limit=1'))
                           .total || 0;
            } catch (e) {
                if (e.message !== 'unauthorized')
                    gdelSaid.textContent = ' Not deleted: ' + e.message;
                return;
            }
        }
        if (!confirm('Delete the group "' + visible(g.signature) + '" and the ' + kept + ' crash' +
                     (kept === 1 ? '' : 'es') + ' kept of it' +
                     ((g.merged || []).length ? ', with the groups merged into it' : '') +
                     '? Their logs and e-mail addresses are erased for good; a later crash ' +
                     'of its signature starts a new group.'))
            return;
        gdel.disabled = true;
        gdelSaid.textContent = '';
        try {
            await api('/api/v1/groups/' + encodeURIComponent(g.id), {method : 'DELETE'});
        } catch (e) {
            if (e.message !== 'unauthorized')
                gdelSaid.textContent = ' Not deleted: ' + e.message;
            gdel.disabled = false;
            return;
        }
        flash = 'Deleted the group "' + visible(g.signature) + '" and the ' + kept + ' crash' +
                (kept === 1 ? '' : 'es') + ' kept of it.';
        location.hash = '#/';
    });
    // The parts absent are null, which append(), unlike el(), would write
    // as the word "null".
    view.append(...[
        el('h1', {class : 'mono', id : 'signature'}, g.signature),
        last ? el('p', {class : 'mono', id : 'group-said'}, last) : null,
        el('div', {class : 'stats'},
           el('div', {}, el('span', {}, 'crashes'), el('b', {id : 'count'}, g.count)),
           el('div', {}, el('span', {}, 'installations'), el('b', {}, g.affected)),
           g.project
               ? el('div', {}, el('span', {}, 'project'),
                    el('a',
                       {href : '#/?project=' + encodeURIComponent(g.project), id : 'group-project'},
                       g.project))
               : null,
           el('div', {}, el('span', {}, 'application'), g.app),
           // A regressed group keeps the version it was resolved in: it
           // crashed again in a newer one, not in that one.
           el('div', {}, el('span', {}, 'status'), el('b', {id : 'status'}, status(g.status)),
              g.resolved_in ? (g.status === 'regressed' ? ' (resolved in ' + g.resolved_in + ')'
                                                        : ' in ' + g.resolved_in)
                            : ''),
           el('div', {}, el('span', {}, 'first seen'), day(g.first_seen)),
           el('div', {}, el('span', {}, 'last seen'), day(g.last_seen)),
           el('div', {}, action, ignore ? ' ' : null, ignore, ' ', gdel, said, gdelSaid)),
        el('h2', {}, 'Crashes per day'), chart(g.days || []),
        el('div', {class : 'cols'},
           el('div', {}, el('h2', {}, 'Versions'),
              table([ 'Version', 'Crashes#' ],
                    (g.versions || []).map((v) => [v.version, num(v.count)]))),
           el('div', {}, el('h2', {}, 'Operating systems'),
              table([ 'OS', 'Crashes#' ], (g.os || []).map((o) => [o.os, num(o.count)]))),
           // Counted since schema generation 6: an older crash has none.
           el('div', {id : 'group-arch'}, el('h2', {}, 'Architectures'),
              table([ 'Architecture', 'Crashes#' ],
                    (g.arch || []).map((a) => [a.arch, num(a.count)])))),
        (g.merged || []).length
            ? el('div', {id : 'merged'}, el('h2', {}, 'Merged into this group'),
                 el('ul', {},
                    ...g.merged.map((m) => el('li', {}, el('span', {class : 'mono'}, m.signature),
                                              ' ', unmerge(m)))),
                 unsaid)
            : null,
        // That crash's own frames.  Without it, the frames the group
        // keeps, as text: they outlive the crash they came from (the
        // representative moves on when it goes), so their indexes could
        // name another crash's frames.
        el('h2', {}, 'Stack of a representative crash',
           // Which one, when it is there: its page has the other threads.
           crashed >= 0 ? ' — ' : null,
           crashed >= 0 ? el('a', {href : '#/crash/' + encodeURIComponent(first.id),
                                   id : 'rep-crash'},
                             'crash ' + String(first.id).slice(0, 8))
                        : null),
        crashed >= 0 ? stack(first, crashed) : frames(g.frames || []),
        el('h2', {}, 'Crashes'),
        el('div', {class : 'filters'},
           el('span', {class : 'muted', id : 'crashes-shown'},
              (inst ? 'installation ' + inst + ', ' : '') +
                  (crashes.length
                       ? 'newest first: ' + (offset + 1) + '–' + (offset + crashes.length) +
                             ' of ' + list.total + ' kept'
                       : 'none kept' +
                             (g.count && !inst ? ' (removed by the retention, or deleted)' : ''))),
           inst ? el('a', {href : '#/group/' + encodeURIComponent(id), id : 'crashes-all'},
                     'all installations')
                : null,
           offset > 0 ? el('a', {href : at(offset - CRASHES_PAGE), id : 'crashes-newer'}, '← newer')
                      : null,
           offset + crashes.length < list.total
               ? el('a', {href : at(offset + CRASHES_PAGE), id : 'crashes-older'}, 'older →')
               : null),
        crashes.length
            ? table(
                  [ 'Crash', 'Received', 'Version', 'Installation' ],
                  crashes.map(
                      (c) =>
                          [el(
                               'td',
                               {},
                               el('a', {
                                   href :
                                       '#/crash/' +
                                           encodeURIComponent(c.id),
                                   class :
                                       'mono crash-link'
                               },
                                  c.id)),
                           day(c.received), c.version || '',
                           el('td', {class : 'mono'},
                              c.installation
                                  ? el('a', {
                                        href : '#/?install=' + encodeURIComponent(c.installation),
                                        class : 'install-link',
                                        title : 'the groups this installation crashed in'
                                    },
                                       c.installation)
                                  : '')]))
            : null].filter((k) => k !== null));
}

async function crash(view, id) {
  const c = await api('/api/v1/crashes/' + encodeURIComponent(id));
  const m = c.metadata || {};
  view.append(
      el('h1', {id : 'crash-title'}, 'Crash ', el('span', {class : 'mono'}, c.id)),
      el('div', {class : 'stats'},
         c.project ? el('div', {}, el('span', {}, 'project'),
                        el('span', {id : 'crash-project'}, c.project))
                   : null,
         el('div', {}, el('span', {}, 'application'), (c.app || '') + ' ' + (c.version || '')),
         el('div', {}, el('span', {}, 'state'), c.state),
         el('div', {}, el('span', {}, 'received'), day(c.received)),
         m.signal_name || m.signal
             ? el('div', {}, el('span', {}, 'signal'), m.signal_name || m.signal,
                  m.signal_code !== undefined ? ' (code ' + m.signal_code + ')' : '')
             : null,
         m.fault_address ? el('div', {}, el('span', {}, 'fault address'),
                              el('span', {id : 'crash-fault', class : 'mono'}, m.fault_address))
                         : null,
         m.crash_time ? el('div', {}, el('span', {}, 'crashed'), day(m.crash_time)) : null,
         // A vfork() child that crashed before exec, in its parent's memory.
         m.vfork_parent ? el('div', {}, el('span', {}, 'process'),
                             el('span', {id : 'crash-vfork'},
                                'a vfork() child of process ' + m.vfork_parent + ', before exec'))
                        : null,
         // glibc's message of the abort (an assert(), malloc's checks).
         m.abort_message ? el('div', {}, el('span', {}, 'abort message'),
                              el('span', {id : 'crash-abort', class : 'mono'}, m.abort_message))
                         : null,
         // An uncaught C++ exception: its type and what().
         m.exception
             ? el('div', {}, el('span', {}, 'exception'),
                  el('span', {id : 'crash-exception', class : 'mono'},
                     m.exception.type + (m.exception.message ? ': ' + m.exception.message : '')))
             : null,
         m.os_pretty_name || m.platform
             ? el('div', {}, el('span', {}, 'OS'), m.os_pretty_name || m.platform)
             : null,
         m.cpuarch ? el('div', {}, el('span', {}, 'architecture'),
                        el('span', {id : 'crash-arch'}, m.cpuarch))
                   : null,
         // A log made from a core dump (faultline core, CRASH_SOURCE core)
         // or a Breakpad/Crashpad minidump (faultline minidump or an
         // upload, CRASH_SOURCE minidump): a program without libfaultline,
         // so no trace events or contexts.
         SOURCES[(m.other || {}).CRASH_SOURCE]
             ? el('div', {}, el('span', {}, 'caught'),
                  el('span', {id : 'crash-source'}, SOURCES[m.other.CRASH_SOURCE]),
                  c.minidump_bytes ? minidumpButton(c.id, c.minidump_bytes) : null)
             : null,
         // Its installation: the groups it crashed in.
         m.install_id ? el('div', {}, el('span', {}, 'installation'),
                           el('a',
                              {
                                  id : 'crash-install',
                                  class : 'mono',
                                  href : '#/?install=' + encodeURIComponent(m.install_id),
                                  title : 'the groups this installation crashed in'
                              },
                              m.install_id))
                      : null,
         // What the user typed into faultline-report --email (text, never markup).
         c.email ? el('div', {}, el('span', {}, 'reported by'),
                      el('span', {id : 'crash-email', class : 'mono'}, c.email))
                 : null,
         c.group_id
             ? el('div', {}, el('span', {}, 'group'),
                  el('a', {href : '#/group/' + encodeURIComponent(c.group_id)}, 'open the group'))
             : null));
  // Stored, not read yet: only the raw log below is there.
  if (c.state === 'pending')
    view.append(el('p', {class: 'muted', id: 'crash-pending'},
      'Waiting for a worker: its signal, stack and groups show once it is processed.'));
  // Process it again: a failed crash once the server is fixed, or a
  // processed one to regroup it (new symbols, new skip lists).
  const again = el('button', {class: 'action', id: 'reprocess'},
    c.state === 'failed' ? 'Process again' : 'Process again (regroup)');
  const said = el('span', {id: 'reprocess-result', role: 'status'});
  again.addEventListener('click', async () => {
    again.disabled = true;
    try {
      const r = await api('/api/v1/crashes/' + encodeURIComponent(c.id) + '/reprocess',
        {method: 'POST'});
      said.textContent = ' ' + (r.state || 'queued');
    } catch (e) {
      said.textContent = ' ' + e.message;
      again.disabled = false;
    }
  });
  // Delete it (its user asked, say): its log and the address its user gave
  // go for good; its group keeps the count.  The page then says so.
  const del = el('button', {class : 'action', id : 'delete'}, 'Delete');
  const delSaid = el('span', {id : 'delete-result', role : 'status'});
  del.addEventListener('click', async () => {
      if (!confirm('Delete crash ' + c.id + '? Its log and the e-mail address it came with ' +
                   'are removed for good; its group keeps its count.'))
          return;
      del.disabled = true;
      try {
          await api('/api/v1/crashes/' + encodeURIComponent(c.id), {method : 'DELETE'});
      } catch (e) {
          if (e.message !== 'unauthorized')
              delSaid.textContent = ' Not deleted: ' + e.message;
          del.disabled = false;
          return;
      }
      route();
  });
  view.append(el('p', {}, c.state === 'processed' || c.state === 'failed' ? again : null,
                 c.state === 'processed' || c.state === 'failed' ? said : null, ' ', del, delSaid));
  // Symbol status: whether each module's debug file was there when the
  // crash was processed (an upload re-symbolicates it), and which side
  // unwound the crashing thread.
  const sy = c.symbols;
  if (sy) {
      const meaning = {
          complete : 'complete: every module with frames had symbols',
          partial : 'partial: some modules had no symbols, or lacked their dwz file or .dwo files',
          missing : 'missing: no module had symbols',
          off : 'off: this server does not symbolicate'
      };
      view.append(
          el('h2', {}, 'Symbols'),
          el('p', {},
             el('span', {id : 'crash-symbols', class : 'sym-' + sy.status},
                meaning[sy.status] || String(sy.status)),
             // "client": the stack the log came with -- for a log made
             // from a core or a minidump, that dump's, not a client's.
             c.stack_source
                 ? el('span', {id : 'stack-source'},
                      c.stack_source === 'client' && SOURCES[((c.metadata || {}).other || {}).CRASH_SOURCE]
                          ? ' — stack ' + SOURCES[c.metadata.other.CRASH_SOURCE]
                          : ' — stack unwound on the ' + c.stack_source)
                 : ''),
          table(
              [ 'Module', 'Build id', 'Symbols' ],
              (sy.modules || [])
                  .map(
                      (m) =>
                          [m.module || '', el('td', {class : 'mono'}, m.build_id || ''),
                           !m.symbols ? 'missing'
                           : m.dwo_missing
                               ? 'yes, without the .dwo files of DWO ids ' +
                                     m.dwo_missing.join(', ') +
                                     ' (upload them: faultline symbols add PROGRAM --server URL finds them)'
                           : m.dwz_missing
                               ? 'yes, without its dwz file ' + m.dwz_missing + ' (upload it)'
                           : m.exports_only
                               ? 'exported functions only, from the stripped library (upload its debug file)'
                               : 'yes'])));
  }
  (c.threads || []).forEach((t, ti) => {
      view.append(
          el('h2', {},
             (t.crashed ? 'Crashed thread ' : 'Thread ') + (t.tid || '') +
                 (t.name ? ' (' + t.name + ')' : ''),
             t.context ? el('span', {'data-ctx' : t.context}, ' — context ' + t.context) : null,
             // A minidump's other thread, unwound by the server from the kept dump.
             t.stack_source === 'server'
                 ? el('span', {class : 'muted thread-source'}, ' — unwound on the server')
                 : null),
          stack(c, ti));
  });
  // A process with more threads than a log keeps (256): the rest were
  // stopped during the dump but are not in it.
  if (m.threads_omitted)
    view.append(el('p', {id: 'threads-omitted', class: 'muted'},
      m.threads_omitted + ' more threads were running; a crash log keeps the first 256.'));
  // More loaded objects than a log keeps (1,024): frames in the others
  // show no module.
  if (m.objects_omitted)
      view.append(el('p', {id : 'objects-omitted', class : 'muted'},
                     m.objects_omitted +
                         ' more objects were loaded; a crash log keeps the first 1,024, ' +
                         'so frames in the others show no module.'));
  // Calling contexts (code built with -finstrument-functions): the server
  // decodes them into stacks on demand, so they come after the page.
  if ((c.threads || []).some((t) => t.context) || (c.trace || []).some((e) => e.context)) {
    const box = el('div', {id: 'contexts', role: 'status'}, el('p', {class: 'muted'}, 'Decoding…'));
    view.append(el('h2', {}, 'Calling contexts'), box);
    contexts(box, c.id);
  }
  if ((c.trace || []).length)
    view.append(el('h2', {}, 'Trace events'), table(['Time (UTC)', 'Thread', 'Event', 'Context'],
      c.trace.map((e) => [clock(e.time_ns, 1e6), String(e.tid),
        // Kept apart by the program, and its debug file not here yet.
        e.format === 'missing' ? el('td', {class: 'muted trace-missing'}, e.text) : e.text,
        e.context ? el('td', {'data-ctx': e.context}, e.context) : ''])));
  if ((c.breadcrumbs || []).length)
    view.append(el('h2', {}, 'Breadcrumbs'), table(['Time (UTC)', 'Category', 'Message'],
      c.breadcrumbs.map((b) => [clock(b.time_ms, 1), b.category, b.message])));
  // What the application set with faultline_set_state(), and the log's
  // own key/value context (ETC lines).
  for (const [title, id, kv] of [['Application state', 'crash-state', m.state],
    ['Context', 'crash-etc', m.etc]]) {
    const rows = Object.entries(kv || {});
    if (rows.length)
      view.append(el('h2', {id: id}, title), table(['Key', 'Value'],
        rows.map(([k, v]) => [k, v === null ? '' : String(v)])));
  }
  // The log as it was received.
  if (c.raw)
    view.append(el('details', {}, el('summary', {}, 'Crash log as received (' +
      c.raw.length + ' characters)'), el('pre', {id: 'crash-raw'}, c.raw)));
}

// Fills box with the crash's decoded calling contexts, asking again while
// the server says it is still decoding (and the page is still shown).
async function contexts(box, id) {
  let r;
  for (let tries = 0; ; tries++) {
      let wait = 1000;
      try {
          r = await api('/api/v1/crashes/' + encodeURIComponent(id) + '/contexts');
    } catch (e) {
        // A busy decoder (503) is asked again later; anything else is said.
        if (e.message !== 'the context decoder is busy') {
            box.replaceChildren(
                el('p', {class : 'error'}, 'Could not decode the contexts: ' + e.message));
            return;
        }
        r = {status : 'pending'};
        wait = 5000;
    }
    if (r.status !== 'pending' || !box.isConnected) break;
    if (tries === 120) {
      box.replaceChildren(el('p', {class: 'error'}, 'Still decoding: reload the page later.'));
      return;
    }
    await new Promise((done) => setTimeout(done, wait));
  }
  if (!box.isConnected) return;
  box.replaceChildren();
  for (const x of r.contexts || []) {
    const where = [];
    if (x.crashed) where.push('the crashed thread');
    const others = (x.threads || []).length - (x.crashed ? 1 : 0);
    if (others > 0) where.push(others === 1 ? '1 other thread' : others + ' other threads');
    if (x.events) where.push(x.events === 1 ? '1 trace event' : x.events + ' trace events');
    const div = el('div', {class: 'context', 'data-value': x.value, 'data-status': x.status},
      el('h3', {}, el('span', {class: 'mono'}, x.value), where.length ? ' — ' + where.join(', ') : ''));
    if (x.status === 'decoded')
      div.append(table(['#', 'Function', 'Module', 'Offset'], (x.frames || []).map((f, i) => [
        String(i), el('span', {class: 'mono'}, f.function || ''), f.module || '',
        el('span', {class: 'mono'}, f.address || '')])));
    else
      div.append(el('p', {class: x.status === 'empty' ? 'muted' : 'error'}, x.message || x.status));
    box.append(div);
  }
  // Where a value appears on the page (thread headings, trace events),
  // its stack follows it, outermost call last.
  const stacks = new Map((r.contexts || []).filter((x) => x.status === 'decoded')
    .map((x) => [x.value, (x.frames || []).map((f) => f.function).join(' ← ')]));
  for (const e of document.querySelectorAll('[data-ctx]'))
    if (stacks.has(e.dataset.ctx))
      e.append(el('span', {class: 'ctx-stack'}, ' (' + stacks.get(e.dataset.ctx) + ')'));
  const missing = (r.files || []).filter((f) => f.status === 'missing');
  if (missing.length && (r.contexts || []).some((x) => x.status !== 'decoded' && x.status !== 'empty'))
    box.append(el('p', {class: 'muted', id: 'contexts-missing'},
      'Files not found on the server (upload the executables with faultline symbols add): ' +
      missing.map((f) => f.module + ' (' + f.build_id + ')').join(', ')));
}

// Stacked bars: one column per day, a segment per series (largest
// first), each with its count in a <title> and data-* attributes.
const COLORS = ['#3e7cb1', '#e07b39', '#52a675', '#c2474f', '#8e6bbf', '#c9a227', '#3aa6a6',
                '#d36fa8', '#7b8794'];

// Per-day counts of each series, stacked; what: the chart's name.
function stacked(id, what, days, series) {
  const w = 720, h = 140;
  const svg = svgBox('chart stacked', w, h);
  svg.setAttribute('id', id);
  const totals = days.map((_, i) => series.reduce((a, s) => a + s.counts[i], 0));
  const most = Math.max(0, ...totals);
  const max = Math.max(1, most);
  const bw = Math.max(2, Math.floor((w - AXIS - 5) / days.length) - 1);
  svgScale(svg, w, h, most);
  days.forEach((d, i) => {
    let y = h;
    series.forEach((s, k) => {
      const n = s.counts[i];
      if (!n)
        return;
      const bh = Math.max(1, Math.round(n / max * (h - 10)));
      y -= bh;
      svgBar(svg, AXIS + i * (bw + 1), y, bw, bh, d + ' ' + s.label + ': ' + n,
        {fill: COLORS[k % COLORS.length], 'data-day': d, 'data-series': s.label, 'data-count': n});
    });
  });
  svgCaption(svg, h, days[0] + ' – ' + days[days.length - 1] +
    (most ? ' (at most ' + most + ' a day)' : ' (none)'), what);
  return svg;
}

function legend(id, name, series) {
  const t = table(['', name, 'Crashes#'], series.map((s, k) => [
    el('span', {class: 'swatch', 'data-color': COLORS[k % COLORS.length]}), s.label,
    num(s.total)]));
  t.id = id;
  t.className = 'legend';
  // Colours through the DOM, not a style attribute: the CSP allows no
  // inline style.
  t.querySelectorAll('.swatch').forEach((e) => { e.style.background = e.dataset.color; });
  return t;
}

async function trends(view, params) {
  const q = new URLSearchParams();
  if (params.get('app')) q.set('app', params.get('app'));
  const days = ['7', '30', '90'].includes(params.get('days')) ? params.get('days') : '30';
  q.set('days', days);
  const t = await api('/api/v1/trends?' + q);
  const app = el('select', {id: 't-app', 'aria-label': 'Application'}, el('option', {value: ''}, 'all applications'),
    ...(t.apps || []).map((a) => el('option', {value: a}, a)));
  app.value = params.get('app') || '';
  const span = el('select', {id: 't-days', 'aria-label': 'Period'}, ...['7', '30', '90'].map(
    (d) => el('option', {value: d}, 'last ' + d + ' days')));
  span.value = days;
  const go = () => {
    const p = new URLSearchParams();
    if (app.value) p.set('app', app.value);
    p.set('days', span.value);
    location.hash = '#/trends?' + p;
  };
  app.addEventListener('change', go);
  span.addEventListener('change', go);
  const total = t.crashes.reduce((a, b) => a + b, 0);
  const label = (key) => (s) => ({label: s.other ? 'other' : (s[key] === null ? 'unknown' : s[key]),
    total: s.total, counts: s.counts});
  const versions = t.versions.map(label('version'));
  const oses = t.os.map(label('os'));
  const arches = (t.arch || []).map(label('arch'));
  view.append(el('h1', {}, 'Trends'), el('div', {class : 'filters'}, app, span),
              el('div', {class : 'stats'},
                 el('div', {}, el('span', {}, 'crashes'), el('b', {id : 't-total'}, total)),
                 el('div', {}, el('span', {}, 'installations on the worst day'),
                    el('b', {id : 't-installs'}, Math.max(0, ...t.installations))),
                 // Past 8 versions the rest are one "other" entry of the API.
                 el('div', {}, el('span', {}, 'versions'),
                    el('b', {id : 't-version-count'},
                       t.versions.some((s) => s.other) ? 'more than ' + (t.versions.length - 1)
                                                       : t.versions.length))),
              el('h2', {}, 'Crashes per day, by version'), stacked('t-versions', 'Crashes per day by version', t.days, versions),
              legend('t-version-legend', 'Version', versions),
              el('h2', {}, 'Crashes per day, by operating system'), stacked('t-os', 'Crashes per day by operating system', t.days, oses),
              legend('t-os-legend', 'OS', oses), el('h2', {}, 'Crashes per day, by architecture'),
              stacked('t-arch', 'Crashes per day by architecture', t.days, arches), legend('t-arch-legend', 'Architecture', arches),
              el('h2', {}, 'Installations that crashed, per day'),
              stacked('t-inst', 'Installations that crashed per day', t.days,
                      [ {label : 'installations', total : 0, counts : t.installations} ]));
}

async function symbols(view) {
  const s = await api('/api/v1/symbols');
  const files = s.symbols || s.files || [];
  view.append(
      el('h1', {}, 'Symbol files'),
      files.length
          ? table([ 'Build id', 'File', 'Status', 'Error' ],
                  files.map((f) => [el('span', {class : 'mono'},
                                       f.build_id || (f.dwo_id ? 'DWO id ' + f.dwo_id : '')),
                                    f.name || f.file || '', f.status || '', f.error || '']))
          : el('p', {class : 'muted'},
               'No symbol files yet: faultline symbols add FILE... --server URL'));
}

// ---- routing

async function route() {
  // Each page draws into a container of its own, so that one whose answer
  // comes after the next page was asked for (a slow server, the back
  // button pressed twice) draws into a container no longer shown.
  const view = el('div');
  $('view').replaceChildren(view);
  if (!token)
    return show();
  const [path, query] = (location.hash.slice(1) || '/').split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  try {
    if (parts[0] === 'group' && parts[1])
        await group(view, parts[1], params);
    else if (parts[0] === 'crash' && parts[1])
      await crash(view, parts[1]);
    else if (parts[0] === 'symbols')
      await symbols(view);
    else if (parts[0] === 'trends')
      await trends(view, params);
    else
      await groups(view, params);
  } catch (e) {
    if (e.message !== 'unauthorized')
      view.append(el('p', {class: 'error', role: 'alert'}, 'Could not load this page: ' + e.message));
  }
  // The window's title names the page (what a screen reader says when the
  // page changes, and what the tab and the history show), unless a later
  // page has taken its place.
  if (view.isConnected) {
    const h = view.querySelector('h1');
    const name = h ? (parts[0] === 'group' ? 'Group: ' : '') + h.textContent : '';
    document.title = (name ? (name.length > 100 ? name.slice(0, 99) + '…' : name) + ' – ' : '') + 'Faultline';
  }
}

function show(message) {
  const loggedIn = !!token;
  if (!loggedIn)
    document.title = 'Log in – Faultline';
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
    $('login-error').textContent = ''; /* the last try's, until this one is answered */
    let r;
    try {
      r = await request('/api/v1/groups?limit=1');
    } catch (e) {
      token = '';
      $('login-error').textContent = 'Not logged in: ' + e.message + '.';
      return;
    }
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
  $('goto').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const id = $('goto-crash').value.trim();
    if (id)
      location.hash = '#/crash/' + encodeURIComponent(id);
    $('goto-crash').value = '';
  });
  window.addEventListener('hashchange', route);
  show();
});
