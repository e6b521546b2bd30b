// The viewer shell: sidebar, top bar (running job, language), hash routing to one page module each.
import { api, onEvent, knownJobs } from './api.js';
import { t, lang, setLang, LANGS } from './i18n.js';
import { h, icon } from './ui.js';
import * as memories from './pages/memories.js';
import * as timeline from './pages/timeline.js';
import * as learned from './pages/learned.js';
import * as integrations from './pages/integrations.js';
import * as sources from './pages/sources.js';
import * as settings from './pages/settings.js';
import * as health from './pages/health.js';

const PAGES = [
  ['memories', memories], ['timeline', timeline], ['learned', learned], ['integrations', integrations],
  ['sources', sources], ['settings', settings], ['health', health],
];

// Logged in with a user's token (team use; GET /api/v1/me): the memory pages only, since the
// daemon's controls (integrations, sources, settings, health, incognito) answer 403 to a user.
const USER_PAGES = ['memories', 'timeline', 'learned'];
let me = null;
let cleanup = null;

function isUser() {
  return !!(me && me.home === false);
}

function pages() {
  return isUser() ? PAGES.filter(([n]) => USER_PAGES.includes(n)) : PAGES;
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const name = pages().some(([n]) => n === path) ? path : 'memories';
  return { name, params: new URLSearchParams(query || '') };
}

function langSwitch() {
  return h('div', { class: 'lang-switch', role: 'group', 'aria-label': t('nav.language') },
    ...LANGS.map(([code, label]) => h('button', {
      class: lang() === code ? 'on' : '', 'data-lang': code, 'aria-pressed': String(lang() === code),
      onclick: () => { setLang(code); render(); },
    }, label)));
}

function jobPill() {
  const active = knownJobs().filter((j) => ['running', 'paused'].includes(j.status));
  if (!active.length) return null;
  const j = active[0];
  const pct = j.fraction != null ? ` · ${Math.round(j.fraction * 100)}%` : '';
  const target = j.kind === 'sync' || j.kind === 'discover' ? 'sources' : 'health';
  return h('a', { class: 'pill', href: `#/${target}`, id: 'job-pill' },
    j.status === 'paused' ? null : h('span', { class: 'spinner' }),
    `${t('job.kind.' + j.kind, {}, j.kind)}${pct}${j.status === 'paused' ? ' · ' + t('status.paused') : ''}`);
}

// The home's incognito switch (PUT /api/v1/privacy): capture paused for every agent until off.
let privacy = null;

function incognitoSwitch() {
  const on = !!(privacy && privacy.incognito);
  const when = on && privacy.since ? new Date(privacy.since * 1000).toLocaleString(lang()) : '';
  return h('button', {
    id: 'incognito-toggle', class: on ? 'incognito on' : 'incognito', 'aria-pressed': String(on),
    title: on ? t('privacy.hint_on', { when }) : t('privacy.hint_off'), disabled: privacy === null,
    onclick: async () => {
      try {
        privacy = await api('/privacy', { method: 'PUT', body: { incognito: !on } });
      } catch (e) { console.error(e); }
      showIncognito();
    },
  }, on ? t('privacy.incognito_on') : t('privacy.incognito'));
}

function showIncognito() {
  const slot = document.getElementById('incognito-slot');
  if (slot && !isUser()) slot.replaceChildren(incognitoSwitch());
}

async function loadPrivacy() {
  try { privacy = await api('/privacy'); } catch (e) { privacy = null; }
  showIncognito();
}

function render() {
  const { name, params } = parseHash();
  document.documentElement.lang = lang();
  document.title = `${t('nav.' + name)} · remem`;
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  const content = h('div', { class: 'content', id: 'content' });
  const pillSlot = h('span', { id: 'pill-slot' }, jobPill());
  const app = h('div', { class: 'app' },
    h('aside', { class: 'sidebar' },
      h('div', { class: 'brand' }, h('img', { src: '/static/favicon.svg', alt: '' }),
        h('div', {}, 'remem', h('small', {}, t('brand.tagline')))),
      h('nav', { class: 'nav' }, ...pages().map(([n]) => h('a', {
        href: `#/${n}`, class: n === name ? 'active' : '', 'data-page': n,
      }, icon(n), t('nav.' + n)))),
      h('div', { class: 'spacer' }),
      h('div', { class: 'sidebar-foot' },
        isUser() ? h('div', { class: 'muted small', id: 'signed-in' }, t('nav.signed_in', { user: me.user })) : null,
        h('button', { class: 'ghost small', id: 'logout', onclick: logout }, t('nav.logout')))),
    h('div', { class: 'main' },
      h('header', { class: 'topbar' }, h('div', { class: 'title' }, t('nav.' + name)), h('div', { class: 'grow' }),
        pillSlot, h('span', { id: 'incognito-slot' }, isUser() ? null : incognitoSwitch()), langSwitch()),
      content));
  document.body.replaceChildren(app);
  const page = PAGES.find(([n]) => n === name)[1];
  cleanup = page.render(content, params) || null;
}

async function logout() {
  try { await api('/auth/logout', { method: 'POST' }); } catch (e) { /* gone anyway */ }
  location.href = '/login';
}

onEvent((type, data) => {
  if (type === 'privacy') { privacy = data; showIncognito(); return; }
  if (type !== 'job' && type !== 'hello') return;
  const slot = document.getElementById('pill-slot');
  if (slot) slot.replaceChildren(...[jobPill()].filter(Boolean));
});

// the first render waits for /me: a signed-in user's pages differ from the home's, and rendering before
// and again after it loaded every list twice (the first one replaced by "Loading…" as it arrived)
async function loadMe() {
  try { me = await api('/me'); } catch (e) { me = null; }
  render();
  if (!isUser()) loadPrivacy();
}

window.addEventListener('hashchange', render);
loadMe();
