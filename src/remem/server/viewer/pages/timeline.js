// Timeline: pick a recent session, see its turns in order.
import { api } from '../api.js';
import { t } from '../i18n.js';
import { h, timeEl, absTime, agentBadge, statusBadge, emptyState, errorBox, loading, fmtNum } from '../ui.js';
import { navigate, replaceParams } from '../nav.js';

export function render(root, params) {
  let session = params.get('session') || '';
  const owner = params.get('owner') || '';
  let alive = true;
  const sessionsBox = h('div', { class: 'list', id: 'session-list' }, loading());
  const turnsBox = h('div', { class: 'card', id: 'session-turns' });
  root.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, t('timeline.title')), h('p', {}, t('timeline.subtitle')))),
    h('div', { class: 'split open' }, h('div', {}, h('h3', {}, t('timeline.recent')), sessionsBox), turnsBox));

  const ownerQ = owner ? `owner=${encodeURIComponent(owner)}` : '';

  async function loadSessions() {
    try {
      const data = await api('/sessions' + (ownerQ ? '?' + ownerQ : ''));
      if (!alive) return;
      const items = data.items || [];
      if (!items.length) {
        sessionsBox.replaceChildren(emptyState(t('timeline.empty_title'), t('timeline.empty_text'),
          h('button', { onclick: () => navigate('sources') }, t('memories.go_sources'))));
        if (!session) turnsBox.classList.add('hidden');
        if (session) loadTurns();
        return;
      }
      sessionsBox.replaceChildren(...items.map((s) => {
        const el = h('div', { class: 'item' + (s.session_id === session ? ' selected' : ''), tabindex: '0', role: 'button',
          'data-session': s.session_id },
        h('div', { class: 'meta' }, agentBadge(s.agent), s.project ? h('span', {}, s.project) : null, timeEl(s.last_at),
          h('span', { class: 'faint' }, t('timeline.turns', { n: fmtNum(s.turns) }))),
        h('div', { class: 'req' }, s.title || s.session_id));
        el.addEventListener('click', () => select(s.session_id));
        el.addEventListener('keydown', (e) => { if (e.key === 'Enter') select(s.session_id); });
        return el;
      }));
      if (!session) select(items[0].session_id);
      else loadTurns();
    } catch (e) {
      sessionsBox.replaceChildren(errorBox(e));
    }
  }

  function select(id) {
    session = id;
    replaceParams('timeline', { session, owner });
    for (const el of sessionsBox.querySelectorAll('.item')) el.classList.toggle('selected', el.dataset.session === id);
    loadTurns();
  }

  async function loadTurns() {
    turnsBox.classList.remove('hidden');
    turnsBox.replaceChildren(loading());
    try {
      const data = await api(`/sessions/${encodeURIComponent(session)}/timeline` + (ownerQ ? '?' + ownerQ : ''));
      if (!alive) return;
      const items = data.items || [];
      if (!items.length) {
        turnsBox.replaceChildren(emptyState(t('timeline.no_turns_title'), t('timeline.no_turns_text')));
        return;
      }
      const first = items[0];
      turnsBox.replaceChildren(
        h('div', { class: 'detail-head' }, h('div', {},
          h('h2', {}, first.request.slice(0, 120)),
          h('div', { class: 'meta muted' }, agentBadge(first.agent), ' ', first.project || '', ' · ',
            absTime(first.started_at || first.created_at), ' · ', t('timeline.turns', { n: fmtNum(items.length) })))),
        h('ol', { class: 'tl', id: 'timeline-list' }, ...items.map((it) => h('li', {},
          h('div', { class: 'when' }, timeEl(it.started_at || it.created_at), ' ', it.status !== 'succeeded' ? statusBadge(it.status) : null),
          h('a', { href: '#', class: 'req', onclick: (e) => { e.preventDefault(); navigate('memories', { open: it.id, owner }); } },
            h('div', { class: 'req' }, it.request)),
          it.reply ? h('div', { class: 'rep muted' }, it.reply) : null,
          it.tools && it.tools.length ? h('div', { class: 'chips' }, ...it.tools.map((n) => h('span', { class: 'chip mono' }, n))) : null))));
    } catch (e) {
      turnsBox.replaceChildren(errorBox(e));
    }
  }

  loadSessions();
  return () => { alive = false; };
}
