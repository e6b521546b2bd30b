// Learned: per project, the active learned memories with links to their evidence turns, the review
// queue (candidates), conflicts side by side, and per memory edit / lock / delete (soft: restorable for
// learn.retention.deleted_days; the viewer offers no hard delete) and its history with rollback; restore of
// a deleted or archived memory; a skill's steps and η; thumbs up / down on learned memories and on the
// items of the recent packets handed to agents (issue 18). Learned text is user data: it only ever enters
// the page as text (ui.js `h`).
import { api } from '../api.js';
import { t } from '../i18n.js';
import { h, timeEl, absTime, emptyState, errorBox, loading, confirmDialog, toast, section, fmtNum } from '../ui.js';
import { replaceParams } from '../nav.js';

// The lifecycle states agents never see, as the listing route names them (layers/types.py STATUSES).
const OUT_STATUSES = ['superseded', 'archived', 'rejected', 'deleted'];

export function render(root, params) {
  const st = { project: params.get('project') || '', owner: params.get('owner') || '', open: params.get('open') || '',
    status: params.get('status') || '', items: [], editing: '' };
  let alive = true;

  const projectSel = h('select', { id: 'learned-project', 'aria-label': t('learned.project') });
  const learnBtn = h('button', { id: 'learn-now', onclick: learnNow }, t('learned.learn_now'));
  const errorSlot = h('div', { id: 'learned-error' });
  const activeBox = h('div', { class: 'list', id: 'learned-active' });
  const conflictBox = h('div', { class: 'list', id: 'learned-conflicts' });
  const reviewBox = h('div', { class: 'list', id: 'learned-review' });
  const otherBox = h('div', { class: 'list' });
  const otherHead = h('summary', {}, t('learned.other', { n: 0 }));
  // which of the memories agents never see the fold lists (the listing's lifecycle states)
  const statusSel = h('select', { id: 'learned-status', 'aria-label': t('learned.status_filter') },
    h('option', { value: '' }, t('learned.status_all')),
    ...OUT_STATUSES.map((s) => h('option', { value: s }, t('learned.status.' + s, {}, s))));
  statusSel.addEventListener('change', () => { st.status = statusSel.value; draw().catch(fail); });
  const packetBox = h('div', { class: 'list', id: 'learned-packets' });
  const detail = h('div', { class: 'detail card hidden', id: 'learned-detail' });
  const otherFold = h('details', { class: 'block', id: 'learned-other' }, otherHead,
    h('p', { class: 'muted' }, t('learned.other_help')),
    h('div', { class: 'filters' }, h('label', { class: 'muted', for: 'learned-status' }, t('learned.status_filter')),
      statusSel), otherBox);
  const lists = h('div', {},
    section(t('learned.active'), activeBox),
    section(t('learned.conflicts'), h('p', { class: 'muted' }, t('learned.conflicts_help')), conflictBox),
    section(t('learned.review'), h('p', { class: 'muted' }, t('learned.review_help')), reviewBox),
    otherFold,
    section(t('learned.packets'), h('p', { class: 'muted' }, t('learned.packets_help')), packetBox));
  const split = h('div', { class: 'split' }, lists, detail);
  projectSel.addEventListener('change', () => { st.project = projectSel.value; st.open = ''; closeDetail(); load(); });

  root.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, t('learned.title')), h('p', {}, t('learned.subtitle'))),
      h('div', { class: 'filters' }, h('label', { class: 'muted', for: 'learned-project' }, t('learned.project')),
        projectSel, learnBtn)),
    errorSlot, split);

  const q = (extra = {}) => {
    const p = new URLSearchParams();
    if (st.owner) p.set('owner', st.owner);
    for (const [k, v] of Object.entries(extra)) if (v !== '' && v !== null && v !== undefined) p.set(k, v);
    const s = p.toString();
    return s ? '?' + s : '';
  };
  const path = (id, rest = '') => `/learned/${encodeURIComponent(id)}${rest}`;

  function saveHash() {
    replaceParams('learned', { project: st.project, owner: st.owner, open: st.open, status: st.status });
  }

  // An API error is shown where the user looks (top of the page) and as a toast; never swallowed.
  function fail(e) {
    if (!alive) return;
    errorSlot.replaceChildren(errorBox(e));
    toast((e && e.message) || String(e), true);
  }

  async function loadProjects() {
    try {
      const data = await api('/learned' + q({ status: 'all', limit: 5000 }));
      if (!alive) return false;
      const counts = new Map();
      for (const m of data.items || []) if (m.project) counts.set(m.project, (counts.get(m.project) || 0) + 1);
      const names = [...counts.keys()].sort();
      if (st.project && !counts.has(st.project)) names.unshift(st.project);
      // none picked yet: the project with the most learned memories
      if (!st.project && names.length) st.project = names.reduce((a, b) => (counts.get(b) > counts.get(a) ? b : a));
      projectSel.replaceChildren(...names.map((p) => h('option', { value: p }, counts.has(p) ? `${p} (${fmtNum(counts.get(p))})` : p)));
      projectSel.value = st.project;
      return true;
    } catch (e) {
      fail(e);
      return false;
    }
  }

  async function load() {
    saveHash();
    errorSlot.replaceChildren();
    if (!st.project) {
      for (const box of [activeBox, conflictBox, reviewBox]) box.replaceChildren();
      activeBox.replaceChildren(emptyState(t('learned.empty_title'), t('learned.empty_text'), learnBtnCopy()));
      return;
    }
    for (const box of [activeBox, conflictBox, reviewBox]) box.replaceChildren(loading());
    try {
      const data = await api('/learned' + q({ project: st.project, status: 'all', limit: 5000 }));
      if (!alive) return;
      st.items = (data.items || []).filter((m) => m.project === st.project);
      await draw();
      loadPackets();
      if (st.open) openDetail(st.open);
    } catch (e) {
      for (const box of [activeBox, conflictBox, reviewBox]) box.replaceChildren();
      fail(e);
    }
  }

  function learnBtnCopy() {
    return h('button', { class: 'primary', onclick: learnNow }, t('learned.learn_now'));
  }

  async function draw() {
    const byId = new Map(st.items.map((m) => [m.id, m]));
    const active = st.items.filter((m) => m.status === 'active');
    const candidates = st.items.filter((m) => m.status === 'candidate');
    const conflicts = candidates.filter((m) => m.data && m.data.conflict_with);
    const review = candidates.filter((m) => !(m.data && m.data.conflict_with));
    const other = st.items.filter((m) => !['active', 'candidate'].includes(m.status));
    saveHash();
    statusSel.value = st.status;
    if (st.status) otherFold.open = true;          // a link to #/learned?status=deleted shows them
    const shown = other.filter((m) => !st.status || m.status === st.status);
    otherHead.textContent = t('learned.other', { n: fmtNum(other.length) });
    otherBox.replaceChildren(...(shown.length ? shown.map((m) => card(m, 'other'))
      : [h('p', { class: 'faint' }, t('learned.no_other'))]));
    activeBox.replaceChildren(...(active.length ? active.map((m) => card(m, 'active'))
      : [emptyState(t('learned.no_active_title'), t('learned.no_active_text'))]));
    reviewBox.replaceChildren(...(review.length ? review.map((m) => card(m, 'review'))
      : [h('p', { class: 'faint' }, t('learned.no_review'))]));
    if (!conflicts.length) { conflictBox.replaceChildren(h('p', { class: 'faint' }, t('learned.no_conflicts'))); return; }
    const pairs = [];
    for (const c of conflicts) {
      let other = byId.get(c.data.conflict_with) || null;
      let err = null;
      if (!other) {
        try { other = await api(path(c.data.conflict_with, q())); } catch (e) { err = e; }
      }
      pairs.push(h('div', { class: 'grid-2 conflict', 'data-id': c.id },
        h('div', {}, h('div', { class: 'faint' }, t('learned.newcomer')), card(c, 'review')),
        h('div', {}, h('div', { class: 'faint' }, t('learned.conflicts_with')),
          other ? card(other, rivalPlace(other)) : errorBox(err))));
    }
    if (alive) conflictBox.replaceChildren(...pairs);
  }

  // the rival's card offers what its status allows: an active one its edit / lock / delete, a candidate
  // approve / reject, a deleted or archived one restore (approving a deleted rival would undo the delete)
  function rivalPlace(m) {
    return m.status === 'active' ? 'active' : m.status === 'candidate' ? 'review' : 'other';
  }

  function kindBadge(m) {
    return h('span', { class: 'badge agent kind' }, t('learned.kind.' + m.kind, {}, m.kind));
  }

  function evidenceLinks(m) {
    const ids = m.evidence || [];
    if (!ids.length) return null;
    return h('div', { class: 'chips evidence', 'aria-label': t('learned.evidence') },
      h('span', { class: 'faint' }, t('learned.evidence')),
      ...ids.slice(0, 12).map((id, i) => h('a', {
        class: 'chip mono', 'data-turn': id,
        href: `#/memories?open=${encodeURIComponent(id)}${st.owner ? '&owner=' + encodeURIComponent(st.owner) : ''}`,
        title: id, onclick: (e) => e.stopPropagation(),
      }, `#${i + 1}`)),
      ids.length > 12 ? h('span', { class: 'chip' }, `+${ids.length - 12}`) : null);
  }

  function card(m, where) {
    const btn = (cls, label, fn, extra = {}) => h('button', { class: `small ${cls}`, type: 'button', ...extra,
      onclick: (e) => { e.stopPropagation(); fn(m); } }, label);
    const thumbs = where === 'other' ? [] : [
      btn('ghost thumb-up', '👍', (x) => verdict(x, 'good'), { title: t('learned.good_title'), 'aria-label': t('learned.good') }),
      btn('ghost thumb-down', '👎', (x) => verdict(x, 'bad'), { title: t('learned.bad_title'), 'aria-label': t('learned.bad') })];
    const fb = (m.data && m.data.feedback) || {};
    const errSlot = h('div', { class: 'card-error' });
    const onCard = (x, fn) => fn(x, errSlot);
    const restorable = ['deleted', 'archived'].includes(m.status);
    const actions = where === 'other' ? [
      restorable ? btn('primary restore', t('learned.restore'), (x) => onCard(x, restore))
        : btn('approve', t('learned.approve'), (x) => decide(x, 'approve'))]
      : where === 'review' ? [btn('primary approve', t('learned.approve'), (x) => decide(x, 'approve')),
        btn('reject', t('learned.reject'), (x) => decide(x, 'reject'))]
      : [btn('ghost edit', t('learned.edit'), startEdit),
        m.locked ? btn('ghost unlock', t('learned.unlock'), (x) => decide(x, 'unlock'))
          : btn('ghost lock', t('learned.lock'), (x) => decide(x, 'lock')),
        btn('danger delete', t('learned.delete'), (x) => onCard(x, remove))];
    const editing = st.editing === m.id && where === 'active';
    const textEl = editing ? editForm(m) : h('div', { class: 'req learned-text' }, m.text || '—');
    const el = h('div', { class: 'item' + (st.open === m.id ? ' selected' : ''), tabindex: '0', role: 'button',
      'data-id': m.id, 'data-status': m.status, 'data-kind': m.kind },
    h('div', { class: 'meta' }, kindBadge(m),
      m.locked ? h('span', { class: 'badge warn locked' }, t('learned.locked')) : null,
      m.edited ? h('span', { class: 'badge edited' }, t('learned.edited')) : null,
      where !== 'active' && m.status !== 'active' ? h('span', { class: 'badge status' }, t('learned.status.' + m.status, {}, m.status)) : null,
      m.status === 'deleted' && m.data && m.data.deleted_at ? h('span', { class: 'faint deleted-at' },
        t('learned.deleted_at'), ' ', timeEl(m.data.deleted_at)) : null,
      m.kind === 'skill' ? etaBadge(m) : null,
      h('span', { class: 'confidence', title: t('learned.confidence') }, `${t('learned.confidence')} ${Math.round((m.confidence || 0) * 100)}%`),
      h('span', { class: 'support' }, t('learned.sessions', { n: fmtNum(m.sessions || 0) })),
      h('span', { class: 'age', title: t('learned.last_seen') }, timeEl((m.data && m.data.last_seen) || m.created_at)),
      (fb.not_followed || []).length ? h('span', { class: 'badge warn not-followed' },
        t('learned.not_followed', { n: fmtNum(fb.not_followed.length) })) : null,
      (fb.weakened || []).length ? h('span', { class: 'badge bad weakened' },
        t('learned.weakened', { n: fmtNum(fb.weakened.length) })) : null),
    textEl,
    m.kind === 'skill' && !editing ? skillSteps(m) : null,
    evidenceLinks(m),
    errSlot,
    editing ? null : h('div', { class: 'chips actions' }, ...thumbs, ...actions,
      btn('ghost history', t('learned.history'), (x) => openDetail(x.id))));
    el.addEventListener('click', (e) => { if (!editing && !e.target.closest('a, button, textarea')) openDetail(m.id); });
    el.addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.target === el) openDetail(m.id); });
    return el;
  }

  // A skill's reliability as the packets show it: η over its trials (untried: η 0.50, said so).
  function etaBadge(m) {
    const d = m.data || {};
    const n = Number(d.trials || 0);
    const eta = Number(d.eta ?? 0.5).toFixed(2);
    return h('span', { class: 'badge eta' + (n && Number(eta) < 0.5 ? ' warn' : ''), title: t('learned.eta_title') },
      n ? t('learned.eta', { eta, n: fmtNum(n) }) : t('learned.eta_untried', { eta }));
  }

  // A skill's recipe from its data: each step (run a command, or an edit) with its {parameters}.
  function skillSteps(m) {
    const d = m.data || {};
    const steps = Array.isArray(d.steps) ? d.steps : [];
    if (!steps.length) return null;
    const params = Array.isArray(d.parameters) ? d.parameters : [];
    return h('div', { class: 'skill' },
      h('ol', { class: 'skill-steps' }, ...steps.map((s) => h('li', { class: 'skill-step', 'data-step-kind': s.kind },
        h('span', { class: 'faint' }, t('learned.step.' + s.kind, {}, s.kind)), ' ',
        h('code', { class: 'mono' }, s.template || '')))),
      params.length ? h('div', { class: 'faint skill-params' }, t('learned.parameters'), ' ',
        ...params.map((p) => h('code', { class: 'mono chip' }, p))) : null);
  }

  function editForm(m) {
    const area = h('textarea', { class: 'edit-text', rows: '3', maxlength: '2000', 'aria-label': t('learned.edit') });
    area.value = m.text || '';
    const save = h('button', { class: 'primary small save-edit', type: 'button', onclick: async (e) => {
      e.stopPropagation();
      save.disabled = true;
      try {
        await api(path(m.id, '/edit' + q()), { method: 'POST', body: { text: area.value } });
        st.editing = '';
        toast(t('learned.saved'));
        await load();
      } catch (err) { save.disabled = false; fail(err); }
    } }, t('learned.save'));
    const cancel = h('button', { class: 'small cancel-edit', type: 'button',
      onclick: (e) => { e.stopPropagation(); st.editing = ''; draw().catch(fail); } }, t('common.cancel'));
    setTimeout(() => area.focus(), 0);
    return h('div', { class: 'edit-form' }, area, h('p', { class: 'faint' }, t('learned.edit_locks')),
      h('div', { class: 'chips' }, save, cancel));
  }

  function startEdit(m) {
    st.editing = m.id;
    draw().catch(fail);
  }

  async function decide(m, action) {
    try {
      await api(path(m.id, `/${action}` + q()), { method: 'POST' });
      toast(t('learned.done.' + action));
      await load();
    } catch (e) { fail(e); }
  }

  async function verdict(m, v) {
    try {
      await api(path(m.id, '/feedback' + q()), { method: 'POST', body: { verdict: v } });
      toast(t('learned.done.' + v));
      await load();
    } catch (e) { fail(e); }
  }

  // The newest packets of this project: what each carried, how its turn went, a thumb on every item.
  async function loadPackets() {
    try {
      const data = await api('/packets' + q({ project: st.project, limit: 20 }));
      if (!alive) return;
      const items = data.items || [];
      packetBox.replaceChildren(...(items.length ? items.map(packetCard)
        : [h('p', { class: 'faint' }, t('learned.no_packets'))]));
    } catch (e) { fail(e); }
  }

  function packetCard(p) {
    const rows = (p.items || []).map((it) => {
      const thumb = (cls, label, v, title) => h('button', { class: `small ghost ${cls}`, type: 'button', title,
        'aria-label': title, 'aria-pressed': String(it.vote === v), disabled: !!it.gone,
        onclick: (e) => { e.stopPropagation(); packetThumb(p, it, v); } }, label);
      return h('li', { class: 'packet-item' + (it.vote ? ' voted' : ''), 'data-item': it.id, 'data-layer': it.layer,
        'data-vote': it.vote || '' },
      h('span', { class: 'badge' }, t('learned.item.' + it.layer, {}, it.layer)),
      it.kind ? h('span', { class: 'badge agent kind' }, t('learned.kind.' + it.kind, {}, it.kind)) : null,
      h('span', { class: 'packet-text' }, it.gone ? t('learned.item.gone') : (it.text || it.id)),
      it.vote ? h('span', { class: 'faint vote' }, t('learned.voted.' + it.vote)) : null,
      thumb('thumb-up', '👍', 'good', t('learned.good')), thumb('thumb-down', '👎', 'bad', t('learned.bad')));
    });
    return h('div', { class: 'item packet', 'data-packet': String(p.id), 'data-outcome': p.outcome || '' },
      h('div', { class: 'meta' }, h('span', { class: 'badge agent' }, p.entry), timeEl(p.created_at),
        h('span', { class: 'badge outcome' }, t('learned.outcome.' + (p.outcome || ''), {}, p.outcome)),
        p.session_id ? h('span', { class: 'mono faint' }, p.session_id) : null),
      h('ol', { class: 'steps packet-items' }, ...rows));
  }

  async function packetThumb(p, it, v) {
    try {
      await api(`/packets/${encodeURIComponent(p.id)}/feedback` + q(), { method: 'POST', body: { item: it.id, verdict: v } });
      toast(it.layer === 'learned' ? t('learned.done.' + v) : t('learned.thanks'));
      await load();
    } catch (e) { fail(e); }
  }

  // Delete and restore answer on the card itself: a refusal (the 30-day window, a memory gone or already
  // restored behind the page's back) is read where the user clicked, and the card stays as it was.
  async function onCardCall(m, slot, rest, done) {
    slot.replaceChildren();
    try {
      await api(path(m.id, rest + q()), { method: 'POST' });
      toast(done);
      await load();
    } catch (e) {
      if (!alive) return;
      slot.replaceChildren(errorBox(e));
      toast((e && e.message) || String(e), true);
    }
  }

  async function remove(m, slot) {
    const ok = await confirmDialog({ title: t('learned.delete_title'), body: t('learned.delete_body'),
      confirm: t('learned.delete'), danger: true });
    if (!ok) return;
    if (st.open === m.id) closeDetail();
    await onCardCall(m, slot, '/delete', t('learned.done.delete'));
  }

  function restore(m, slot) {
    return onCardCall(m, slot, '/restore', t('learned.done.restore'));
  }

  async function learnNow() {
    learnBtn.disabled = true;
    try {
      const r = await api('/learned/learn' + q({ project: st.project }), { method: 'POST' });
      toast(t('learned.learned', { n: fmtNum(r.created || 0) }));
      await loadProjects();
      await load();
    } catch (e) { fail(e); } finally { learnBtn.disabled = false; }
  }

  function closeBtn() {
    return h('button', { class: 'ghost small', 'aria-label': t('common.close'), onclick: closeDetail }, '✕');
  }

  function closeDetail() {
    st.open = ''; saveHash();
    split.classList.remove('open'); detail.classList.add('hidden');
    for (const el of root.querySelectorAll('.item.selected')) el.classList.remove('selected');
  }

  async function openDetail(id) {
    st.open = id; saveHash();
    for (const el of root.querySelectorAll('.item[data-id]')) el.classList.toggle('selected', el.dataset.id === id);
    split.classList.add('open');
    detail.classList.remove('hidden');
    detail.replaceChildren(loading());
    try {
      const [m, hist] = await Promise.all([api(path(id, q())), api(path(id, '/history' + q()))]);
      if (!alive || st.open !== id) return;
      detail.replaceChildren(...detailView(m, hist.events || []).filter(Boolean));
    } catch (e) {
      if (!alive || st.open !== id) return;
      detail.replaceChildren(h('div', { class: 'detail-head' }, h('h2', {}, t('learned.detail')), closeBtn()), errorBox(e));
    }
  }

  function change(ev) {
    const b = ev.before || {}; const a = ev.after || {};
    const parts = [];
    for (const k of ['status', 'locked', 'edited']) {
      if (ev.before && ev.after && b[k] !== a[k] && a[k] !== undefined) parts.push(`${k}: ${b[k] ?? '—'} → ${a[k]}`);
    }
    const text = ev.after && a.text !== b.text ? h('div', { class: 'event-text' }, a.text || '') : null;
    return [parts.length ? h('div', { class: 'mono faint' }, parts.join(' · ')) : null, text];
  }

  function detailView(m, events) {
    const quotes = (m.quotes || []).map((qt) => h('li', { class: qt.against ? 'step error' : 'step' },
      h('div', {}, h('a', { href: `#/memories?open=${encodeURIComponent(qt.turn_id)}${st.owner ? '&owner=' + encodeURIComponent(st.owner) : ''}`,
        class: 'quote-link', 'data-turn': qt.turn_id }, absTime(qt.at)),
      qt.against ? h('span', { class: 'badge bad' }, t('learned.against')) : null),
      h('div', { class: 'quote' }, qt.request)));
    const rows = events.map((ev) => h('li', { class: 'step event', 'data-event': ev.id, 'data-action': ev.action },
      h('div', {}, h('b', {}, t('learned.action.' + ev.action, {}, ev.action)), ' · ',
        h('span', { class: 'faint' }, ev.actor), ' · ', timeEl(ev.ts),
        ev.action === 'forgotten' || ev.action === 'forget' ? null
          : h('button', { class: 'small ghost rollback', type: 'button', 'data-event': ev.id,
            onclick: () => rollback(ev) }, t('learned.rollback'))),
      ...change(ev)));
    return [
      h('div', { class: 'detail-head' }, h('div', {}, h('div', { class: 'meta' }, kindBadge(m), ' ',
        t('learned.status.' + m.status, {}, m.status), m.locked ? ' · ' + t('learned.locked') : '')), closeBtn()),
      section(t('learned.text'), h('pre', { class: 'pre', id: 'learned-detail-text' }, m.text || '—')),
      quotes.length ? section(t('learned.evidence'), h('ol', { class: 'steps', id: 'learned-quotes' }, ...quotes)) : null,
      section(t('learned.history'), events.length ? h('ol', { class: 'steps', id: 'learned-history' }, ...rows)
        : h('p', { class: 'faint' }, t('learned.no_history'))),
      section(t('memories.about'), h('dl', { class: 'kv' },
        h('dt', {}, 'ID'), h('dd', { class: 'mono' }, m.id),
        h('dt', {}, t('learned.layer')), h('dd', {}, m.layer),
        m.slot ? [h('dt', {}, t('learned.slot')), h('dd', { class: 'mono' }, `${m.slot} = ${m.value || ''}`)] : null,
        h('dt', {}, t('learned.updated')), h('dd', {}, absTime(m.updated_at)))),
    ];
  }

  async function rollback(ev) {
    try {
      await api(`/learned/events/${encodeURIComponent(ev.id)}/rollback` + q(), { method: 'POST' });
      toast(t('learned.rolled_back'));
      await load();
      if (!st.open) openDetail(ev.learned_id);
    } catch (e) { fail(e); }
  }

  (async () => { if (await loadProjects()) await load(); })();
  return () => { alive = false; };
}
