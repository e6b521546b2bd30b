// Login: paste the token once; the daemon answers with an HttpOnly session cookie.
// A link of the form /login#token=… (from `remem status --login-link`) logs in directly;
// the fragment never reaches the server and is removed from the address bar at once.
import { api } from './api.js';
import { t, lang, setLang, LANGS } from './i18n.js';
import { h } from './ui.js';

async function submit(token, err, btn) {
  err.replaceChildren();
  btn.disabled = true;
  try {
    await api('/auth/login', { method: 'POST', body: { token: token.trim() } });
    location.replace('/');
  } catch (e) {
    btn.disabled = false;
    const msg = e.status === 401 ? t('login.bad_token') : e.status === 429 ? t('login.too_many') : e.message;
    err.replaceChildren(h('div', { class: 'error-box', role: 'alert', id: 'login-error' }, msg));
  }
}

// the daemon writes where this home's token lives into the page (REMEM_HOME may be anywhere)
function tokenPath() {
  const meta = document.querySelector('meta[name="remem-token-path"]');
  return (meta && meta.getAttribute('content')) || '~/.remem/token';
}

function render() {
  document.documentElement.lang = lang();
  document.title = `${t('login.title')} · remem`;
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'current-password', placeholder: t('login.placeholder'),
    'aria-label': t('login.placeholder'), required: true });
  const err = h('div', {});
  const btn = h('button', { class: 'primary', type: 'submit', id: 'login-button' }, t('login.button'));
  const form = h('form', { onsubmit: (e) => { e.preventDefault(); submit(input.value, err, btn); } }, input, btn, err);
  const langs = h('div', { class: 'lang-switch' }, ...LANGS.map(([code, label]) => h('button', {
    class: lang() === code ? 'on' : '', 'data-lang': code, onclick: () => { setLang(code); render(); } }, label)));
  document.body.replaceChildren(h('div', { class: 'login-wrap' }, h('div', { class: 'login' },
    h('div', { class: 'top' }, langs),
    h('div', { class: 'card' },
      h('div', { class: 'brand' }, h('img', { src: '/static/favicon.svg', alt: '' }), h('div', {}, 'remem', h('small', {}, t('brand.tagline')))),
      h('h1', {}, t('login.title')), h('p', { class: 'muted' }, t('login.intro')), form,
      h('p', { class: 'hint' }, t('login.hint_1'), ' ', h('code', { id: 'token-hint' }, `cat ${tokenPath()}`), ' ', t('login.hint_2'), ' ',
        h('code', {}, 'remem status --login-link'), t('login.hint_3'))))));
  input.focus();
}

function fromLink() {
  const m = location.hash.match(/token=([^&]+)/);
  if (!m) return;
  history.replaceState(null, '', '/login');
  submit(decodeURIComponent(m[1]), document.querySelector('.login form div'), document.getElementById('login-button'));
}

render();
fromLink();
window.addEventListener('hashchange', fromLink);
