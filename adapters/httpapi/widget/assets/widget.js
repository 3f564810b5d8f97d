// Concierge chat widget, the ES module (no bundler) of the page GET
// /chat/{slug}. Contract and behaviour: docs/widget.md.
import { marked, Marked } from './vendor/marked/marked.esm.js';
import { createParser } from './vendor/eventsource-parser/parse.js';
import { translator } from './strings.js';

// DOMPurify ships its minified build only as a classic (UMD) script: the page
// loads it with `defer` just before this module, so it has run (and set
// window.DOMPurify) by the time this module does.
const { DOMPurify } = window;
if (!DOMPurify) throw new Error('concierge widget: DOMPurify is not loaded (vendor/dompurify/purify.min.js)');

const MAX_CHARS = 8000;
const RENDER_INTERVAL_MS = 50; // re-render a streaming answer at most this often
const POLL_INTERVAL_MS = 3000; // while the live stream is down
const STORAGE_PREFIX = 'concierge:session:';

const cfg = readConfig();
const agent = cfg.agent || {};
const t = translator(document.documentElement.lang);
const apiBase = (cfg.api && cfg.api.base) || '/api';
const slug = cfg.widgetSlug || agent.slug || '';
const agentName = agent.name || 'Assistant';

const state = {
	gen: 0, // bumped by a new conversation: stale async work checks it
	identity: readIdentityFromHash(),
	sessionId: '',
	status: 'AI',
	statusSets: 0, // bumped by every setStatus: a poll's answer may be older
	sending: false,
	lastMessageId: '', // newest stored message seen (poll's `after`)
	lastEventId: '', // newest live event id (Last-Event-ID)
	live: null, // AbortController of the live stream
	pollTimer: 0,
	byId: new Map(), // message id -> view
	pendingUser: [], // optimistic USER views not yet bound to an id
	humanAvailable: null, // whether a person is there to answer a handoff (null: not known yet)
};

const metrics = { firstTokenMs: null, answers: [] };
window.conciergeWidget = {
	metrics,
	get sessionId() { return state.sessionId; },
	get status() { return state.status; },
	get liveConnected() { return !!state.liveOpen; },
	get humanAvailable() { return state.humanAvailable; },
	ready: false,
};

// Markdown, sanitized

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
	if (node.tagName === 'A' && node.hasAttribute('href')) {
		node.setAttribute('target', '_blank');
		node.setAttribute('rel', 'noopener noreferrer nofollow');
	}
	if (node.tagName === 'IMG') {
		if (!node.getAttribute('src')) { node.remove(); return; }
		node.setAttribute('loading', 'lazy');
		if (!node.hasAttribute('alt')) node.setAttribute('alt', '');
	}
});
const PURIFY = {
	RETURN_DOM_FRAGMENT: true,
	FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'iframe', 'object', 'embed', 'svg', 'math'],
	FORBID_ATTR: ['style', 'class', 'id'],
	// Absolute http(s), mailto and tel links only: no javascript:, data: or relative URLs.
	ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|tel:)/i,
};

const MARKED = { async: false, gfm: true, breaks: true };

function markdown(text) {
	const html = marked.parse(String(text || ''), MARKED);
	return DOMPurify.sanitize(html, PURIFY);
}

// A person's reply is typed in a plain text box: its Markdown (bold, links)
// is rendered, but anything that looks like HTML ("type <order number>") is
// what they wrote, shown as text, not a tag for DOMPurify to drop.
const escapeHTML = (s) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const personMarked = new Marked({ ...MARKED, renderer: { html: ({ text }) => escapeHTML(text) } });

function personMarkdown(text) {
	return DOMPurify.sanitize(personMarked.parse(String(text || '')), PURIFY);
}

// Small helpers

function readConfig() {
	try { return JSON.parse(document.getElementById('concierge-config').textContent) || {}; } catch { return {}; }
}

function el(tag, attrs, ...children) {
	const node = document.createElement(tag);
	if (tag === 'button') node.type = 'button';
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false) continue;
		if (k === 'class') node.className = v;
		else if (k === 'text') node.textContent = v;
		else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
		else node.setAttribute(k, v === true ? '' : String(v));
	}
	for (const c of children.flat()) if (c) node.append(c);
	return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
function icon(path) {
	const svg = document.createElementNS(SVG_NS, 'svg');
	svg.setAttribute('viewBox', '0 0 24 24');
	svg.setAttribute('aria-hidden', 'true');
	svg.setAttribute('focusable', 'false');
	const p = document.createElementNS(SVG_NS, 'path');
	p.setAttribute('d', path);
	svg.append(p);
	return svg;
}
const THUMB = 'M2 21h4V9H2v12zm20-11a2 2 0 0 0-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 6.6 7.6C6.2 8 6 8.5 6 9v10a2 2 0 0 0 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z';
const SEND = 'M2 21l21-9L2 3v7l15 2-15 2z';
const PLUS = 'M19 13h-6v6h-2v-6H5v-2h6V5h2v6h6z';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function base64urlJSON(s) {
	try { return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)))); } catch { return null; }
}

function readIdentityFromHash() {
	const h = new URLSearchParams(location.hash.slice(1));
	return makeIdentity(h.get('identity'), h.get('signature'));
}

function makeIdentity(identity, signature) {
	if (typeof identity !== 'string' || typeof signature !== 'string' || !identity || !signature) return null;
	const claims = base64urlJSON(identity);
	return { identity, signature, userId: claims && typeof claims.userId === 'string' ? claims.userId : '' };
}

function storageKey() {
	const uid = state.identity && state.identity.userId;
	return STORAGE_PREFIX + slug + (uid ? ':' + uid : '');
}
function storeSession(id) {
	try {
		if (id) localStorage.setItem(storageKey(), id);
		else localStorage.removeItem(storageKey());
	} catch { /* storage blocked (third-party iframe): the session lasts as long as the page */ }
}
function storedSession() {
	try { return localStorage.getItem(storageKey()) || ''; } catch { return ''; }
}

// Colours (contrast by luminance)

function luminance(hex) {
	const m = /^#?([0-9a-f]{6})$/i.exec(hex || '');
	if (!m) return null;
	const [r, g, b] = [0, 2, 4].map((i) => {
		const c = parseInt(m[1].slice(i, i + 2), 16) / 255;
		return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
	});
	return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const ratio = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);

function applyTheme() {
	const primary = luminance(agent.primaryColor) === null ? '#2563eb' : agent.primaryColor.toLowerCase();
	const L = luminance(primary);
	const dark = '#111827';
	const onPrimary = ratio(L, 1) >= ratio(L, luminance(dark)) ? '#ffffff' : dark;
	// Text and outlines in the primary colour on white need 4.5:1; else a dark ink.
	const ink = ratio(L, 1) >= 4.5 ? primary : dark;
	const root = document.documentElement.style;
	root.setProperty('--primary', primary);
	root.setProperty('--on-primary', onPrimary);
	root.setProperty('--primary-ink', ink);
}

// API

class APIError extends Error {
	constructor(status, code, message, retryAfter) {
		super(message || code || 'HTTP ' + status);
		Object.assign(this, { status, code, retryAfter });
	}
}

function headers(extra) {
	const h = { ...extra };
	if (state.identity) {
		h['X-Service-Identity'] = state.identity.identity;
		h['X-Service-Signature'] = state.identity.signature;
	}
	return h;
}

async function call(method, path, body, opts = {}) {
	let res;
	try {
		res = await fetch(apiBase + path, {
			method,
			headers: headers(body === undefined ? opts.headers : { 'Content-Type': 'application/json', ...opts.headers }),
			body: body === undefined ? undefined : JSON.stringify(body),
			signal: opts.signal,
			cache: 'no-store',
			credentials: 'omit',
		});
	} catch (e) {
		if (e.name === 'AbortError') throw e;
		throw new APIError(0, 'NETWORK', e.message);
	}
	if (!res.ok) {
		let err = {};
		try { err = (await res.json()).error || {}; } catch { /* not JSON */ }
		throw new APIError(res.status, err.code, err.message, Number(res.headers.get('Retry-After')) || 0);
	}
	if (opts.raw) return res;
	return res.status === 204 ? null : res.json();
}

function errorText(e) {
	if (!(e instanceof APIError)) return t('errorGeneric');
	if (e.status === 0) return t('errorNetwork');
	if (e.status === 429) return t('errorRateLimited', { seconds: e.retryAfter || 60 });
	if (e.status === 401) return t('errorIdentity');
	if (e.status === 404) return t('errorUnavailable');
	if (e.status === 400 && e.message) return e.message;
	return t('errorGeneric');
}

// readSSE feeds a streaming response to eventsource-parser and calls onEvent
// with each event's JSON data, its id and when its bytes arrived.
async function readSSE(res, onEvent) {
	const reader = res.body.getReader();
	const decoder = new TextDecoder();
	let arrivedAt = 0;
	const parser = createParser({
		onEvent(ev) {
			let data;
			try { data = JSON.parse(ev.data); } catch { return; }
			onEvent(data, ev.id || '', arrivedAt);
		},
	});
	for (;;) {
		const { value, done } = await reader.read();
		if (done) return;
		arrivedAt = performance.now();
		parser.feed(decoder.decode(value, { stream: true }));
	}
}

const idOf = (eventId) => String(eventId || '').split(':')[0];

// The page

const app = document.getElementById('concierge-app');
const ui = {};

function build() {
	const initial = () => el('span', { class: 'cw-avatar cw-avatar--initial', 'aria-hidden': 'true', text: (agentName.trim()[0] || '?').toUpperCase() });
	const avatar = agent.avatarUrl ? el('img', { class: 'cw-avatar', src: agent.avatarUrl, alt: '', referrerpolicy: 'no-referrer', onerror: () => avatar.replaceWith(initial()) }) : initial();
	ui.subtitle = el('p', { class: 'cw-subtitle' });
	ui.newButton = el('button', { class: 'cw-icon-button', 'aria-label': t('newConversation'), title: t('newConversation'), onclick: () => newConversation(true) }, icon(PLUS));
	const header = el('header', { class: 'cw-header' },
		avatar,
		el('div', { class: 'cw-heading' }, el('h1', { class: 'cw-title', text: agentName }), ui.subtitle),
		ui.newButton);

	ui.status = el('div', { class: 'cw-status', role: 'status', hidden: true });
	ui.log = el('div', { class: 'cw-log', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-label': t('conversation'), tabindex: '0' });
	ui.announce = el('div', { class: 'cw-sr-only', 'aria-live': 'polite', role: 'status' });

	ui.handoffName = el('input', { id: 'cw-handoff-name', name: 'name', type: 'text', autocomplete: 'name', maxlength: 200 });
	ui.handoffEmail = el('input', { id: 'cw-handoff-email', name: 'email', type: 'email', autocomplete: 'email', maxlength: 254 });
	ui.handoffError = el('p', { class: 'cw-error', role: 'alert', hidden: true });
	// The intro says whether anyone is available; it is a live region, so
	// a screen reader hears the change when the answer arrives after the
	// form opened.
	ui.handoffIntro = el('p', { id: 'cw-handoff-intro', 'aria-live': 'polite', text: t('handoffIntro') });
	ui.handoffEmailLabel = el('label', { for: 'cw-handoff-email', text: t('handoffEmail') });
	ui.handoff = el('form', { class: 'cw-handoff', hidden: true, 'aria-labelledby': 'cw-handoff-title', onsubmit: submitHandoff, onkeydown: (e) => { if (e.key === 'Escape') closeHandoff(); } },
		el('h2', { id: 'cw-handoff-title', text: t('handoffTitle') }),
		ui.handoffIntro,
		el('div', { class: 'cw-field' }, el('label', { for: 'cw-handoff-name', text: t('handoffName') }), ui.handoffName),
		el('div', { class: 'cw-field' }, ui.handoffEmailLabel, ui.handoffEmail),
		ui.handoffError,
		el('div', { class: 'cw-handoff-actions' },
			el('button', { type: 'submit', class: 'cw-button cw-button--primary', text: t('handoffSubmit') }),
			el('button', { class: 'cw-button', text: t('handoffCancel'), onclick: closeHandoff })));

	ui.input = el('textarea', { id: 'cw-input', class: 'cw-input', rows: 1, maxlength: MAX_CHARS, placeholder: t('inputPlaceholder'), 'aria-label': t('inputLabel'), autocomplete: 'off', enterkeyhint: 'send' });
	ui.input.addEventListener('keydown', (e) => {
		if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
			e.preventDefault();
			ui.composer.requestSubmit();
		}
	});
	ui.input.addEventListener('input', autoGrow);
	ui.send = el('button', { type: 'submit', class: 'cw-send', 'aria-label': t('send'), title: t('send') }, icon(SEND));
	ui.composer = el('form', { class: 'cw-composer', onsubmit: (e) => { e.preventDefault(); send(ui.input.value); } }, ui.input, ui.send);
	ui.error = el('p', { class: 'cw-error', role: 'alert', hidden: true });

	ui.handoffButton = cfg.handoffAvailable
		? el('button', { class: 'cw-link-button', text: t('talkToPerson'), onclick: openHandoff })
		: null;
	const footer = el('footer', { class: 'cw-footer' },
		ui.handoffButton,
		cfg.poweredBy === false ? null : el('a', { class: 'cw-powered', href: 'https://github.com/conciergehq/concierge', target: '_blank', rel: 'noopener noreferrer', text: t('poweredBy') }));

	// Landmarks: the header (banner), the conversation (main), the footer (contentinfo).
	const main = el('main', { class: 'cw-main' }, ui.status, ui.log, ui.handoff, ui.error, ui.composer, ui.announce);
	app.replaceChildren(header, main, footer);
	app.dataset.state = 'ready';
}

function autoGrow() {
	ui.input.style.height = 'auto';
	ui.input.style.height = Math.min(ui.input.scrollHeight, 160) + 'px';
}

function showError(text) {
	ui.error.textContent = text || '';
	ui.error.hidden = !text;
}

function announce(text) {
	ui.announce.textContent = '';
	setTimeout(() => { ui.announce.textContent = text; }, 30);
}

function nearBottom() {
	return ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 80;
}
function scrollDown(force) {
	if (force || nearBottom()) ui.log.scrollTop = ui.log.scrollHeight;
}

function renderWelcome() {
	ui.log.replaceChildren();
	state.byId.clear();
	state.pendingUser = [];
	if (agent.welcomeMessage) {
		const w = el('div', { class: 'cw-msg cw-msg--assistant cw-welcome' },
			el('span', { class: 'cw-sr-only', text: t('assistant', { name: agentName }) + ': ' }),
			el('div', { class: 'cw-bubble cw-md' }, markdown(agent.welcomeMessage)));
		ui.log.append(w);
	}
	const qs = (agent.suggestedQuestions || []).filter((q) => typeof q === 'string' && q.trim());
	ui.suggestions = null;
	if (qs.length) {
		ui.suggestions = suggestionList(qs, 'cw-suggestions');
		ui.log.append(ui.suggestions);
	}
}

function suggestionList(questions, cls) {
	return el('div', { class: cls, role: 'group', 'aria-label': t('suggestions') },
		questions.map((q) => el('button', { class: 'cw-chip', text: q, onclick: () => send(q) })));
}

function setStatus(status) {
	if (!status) return;
	state.statusSets++;
	state.status = status;
	app.dataset.status = status;
	const human = status === 'HANDOFF_REQUESTED' || status === 'HUMAN';
	ui.subtitle.textContent = t(status === 'HUMAN' ? 'personNoName' : 'subtitleAI');
	ui.status.hidden = !(human || status === 'RESOLVED');
	ui.status.textContent = ui.status.hidden ? '' : t('status_' + status);
	if (ui.handoffButton) ui.handoffButton.hidden = human;
	if (human) {
		closeHandoff(false);
		for (const o of ui.log.querySelectorAll('.cw-offer')) o.remove();
	}
}

// Messages

function roleLabel(m) {
	if (m.role === 'USER') return t('you');
	if (m.role === 'HUMAN') return m.authorName ? t('person', { name: m.authorName }) : t('personNoName');
	return t('assistant', { name: agentName });
}

// addMessage renders a stored message (or an optimistic USER one) at the end.
function addMessage(m) {
	if (m.id && state.byId.has(m.id)) return state.byId.get(m.id);
	if (m.role === 'SYSTEM') return addNotice(m.id, m.status);
	const kind = { USER: 'user', ASSISTANT: 'assistant', HUMAN: 'human' }[m.role] || 'assistant';
	const body = el('div', { class: 'cw-bubble' + (kind === 'user' ? '' : ' cw-md') });
	const label = el('span', { class: kind === 'human' ? 'cw-author' : 'cw-sr-only', text: roleLabel(m) + (kind === 'human' ? '' : ': ') });
	const node = el('div', { class: 'cw-msg cw-msg--' + kind }, label, body);
	const view = { id: m.id || '', role: m.role, node, body, text: '', final: false, lastRender: 0, scheduled: false };
	if (m.role === 'USER') body.textContent = m.content || '';
	else if (m.content !== undefined) { view.text = m.content || ''; body.replaceChildren((m.role === 'HUMAN' ? personMarkdown : markdown)(view.text)); }
	if (m.id) { node.dataset.id = m.id; state.byId.set(m.id, view); state.lastMessageId = m.id; }
	if (m.role === 'ASSISTANT' && m.id && m.content !== undefined) finishAnswer(view, m);
	hideSuggestions(m.role === 'USER');
	ui.log.append(node);
	scrollDown(m.role === 'USER');
	return view;
}

function addNotice(id, status) {
	if (id && state.byId.has(id)) return state.byId.get(id);
	const node = el('div', { class: 'cw-notice', text: t('notice_' + status) });
	const view = { id, role: 'SYSTEM', node };
	if (id) { node.dataset.id = id; state.byId.set(id, view); state.lastMessageId = id; }
	ui.log.append(node);
	scrollDown(false);
	return view;
}

function hideSuggestions(yes) {
	if (yes && ui.suggestions) { ui.suggestions.remove(); ui.suggestions = null; }
}

// bindId gives a view its message id; stored says the message is stored
// already (poll may start after it), which an answer is only at its end.
function bindId(view, id, stored = true) {
	if (!id || view.id === id) return;
	view.id = id;
	view.node.dataset.id = id;
	state.byId.set(id, view);
	if (stored) state.lastMessageId = id;
	state.pendingUser = state.pendingUser.filter((v) => v !== view);
}

// A USER message from the live stream or poll may be one we are sending.
function adoptOrAdd(m) {
	if (state.byId.has(m.id)) return;
	if (m.role === 'USER') {
		const pending = state.pendingUser.find((v) => v.body.textContent === (m.content || '').trim());
		if (pending) { bindId(pending, m.id); return; }
	}
	addMessage(m);
}

// answerView returns the bubble of an answer being streamed, creating it.
function answerView(replyId) {
	let view = replyId && state.byId.get(replyId);
	if (!view) {
		view = addMessage({ role: 'ASSISTANT' });
		view.node.classList.add('cw-streaming');
		bindId(view, replyId, false);
	}
	return view;
}

function scheduleRender(view) {
	if (view.scheduled) return;
	view.scheduled = true;
	const wait = view.lastRender ? Math.max(0, view.lastRender + RENDER_INTERVAL_MS - performance.now()) : 0;
	const frame = () => requestAnimationFrame(() => {
		view.scheduled = false;
		view.lastRender = performance.now();
		const keep = nearBottom();
		view.body.replaceChildren(markdown(view.text));
		if (view.metric && view.metric.visibleAt === null) {
			view.metric.visibleAt = performance.now();
			view.metric.delayMs = Math.round((view.metric.visibleAt - view.metric.bytesAt) * 10) / 10;
			if (metrics.firstTokenMs === null) metrics.firstTokenMs = view.metric.delayMs;
		}
		if (keep) scrollDown(true);
	});
	if (wait) setTimeout(frame, wait); else frame();
}

// finishAnswer completes an ASSISTANT message: final text, citations,
// feedback, a handoff offer.
function finishAnswer(view, m) {
	view.final = true;
	if (view.id) state.lastMessageId = view.id;
	view.node.classList.remove('cw-streaming');
	if (typeof m.content === 'string' && (m.content !== view.text || !view.body.firstChild)) {
		view.text = m.content;
		view.body.replaceChildren(markdown(view.text));
		if (view.metric && view.metric.visibleAt === null) scheduleRender(view);
	}
	const cites = dedupeCitations(m.citations || []);
	if (cites.length && !view.node.querySelector('.cw-cites')) {
		view.node.append(el('div', { class: 'cw-cites' },
			el('span', { class: 'cw-cites-label', text: t('sources') + ':' }),
			el('ul', {}, cites.map((c) => el('li', {}, citation(c))))));
	}
	if (m.fallbackReason === 'INTERRUPTED') {
		// The server answering stopped: what came is shown, marked as such;
		// there is nothing to rate.
		if (!view.node.querySelector('.cw-interrupted')) view.node.append(el('p', { class: 'cw-interrupted', text: t('answerInterrupted') }));
		return;
	}
	if (view.id && !view.node.querySelector('.cw-feedback')) view.node.append(feedbackButtons(view, m.feedback && m.feedback.rating));
	if (m.offerHandoff && cfg.handoffAvailable && state.status !== 'HUMAN' && state.status !== 'HANDOFF_REQUESTED') {
		view.node.append(el('div', { class: 'cw-offer' },
			el('span', { text: t('offerHandoff') }),
			el('button', { class: 'cw-button cw-button--primary', text: t('talkToPerson'), onclick: openHandoff })));
	}
}

function dedupeCitations(list) {
	const seen = new Set();
	return list.filter((c) => c && !seen.has(c.url + c.documentName) && seen.add(c.url + c.documentName));
}

function citation(c) {
	const name = c.documentName || c.sourceId || '?';
	if (typeof c.url === 'string' && /^https?:\/\//i.test(c.url)) {
		return el('a', { class: 'cw-chip cw-cite', href: c.url, target: '_blank', rel: 'noopener noreferrer nofollow', title: (c.snippet || '') + ' ' + t('opensInNewTab') }, name);
	}
	return el('span', { class: 'cw-chip cw-cite', title: c.snippet || '' }, name);
}

function feedbackButtons(view, rating) {
	const box = el('div', { class: 'cw-feedback', 'data-rating': rating || '' });
	for (const [r, label] of [['up', t('feedbackUp')], ['down', t('feedbackDown')]]) {
		box.append(el('button', { class: 'cw-thumb cw-thumb--' + r, 'data-r': r, 'aria-label': label, title: label, 'aria-pressed': String(rating === r), onclick: () => rate(view, r, box) }, icon(THUMB)));
	}
	return box;
}

// rate sets (or, on the pressed thumb, clears) an answer's rating.
async function rate(view, value, box) {
	const show = (r) => {
		box.dataset.rating = r || '';
		for (const b of box.children) b.setAttribute('aria-pressed', String(b.dataset.r === r));
	};
	const before = box.dataset.rating || null;
	const next = before === value ? null : value;
	show(next);
	try {
		show((await call('POST', `/chat/${state.sessionId}/messages/${view.id}/feedback`, { rating: next })).rating ?? null);
		if (next) announce(t('feedbackThanks'));
	} catch {
		show(before);
		announce(t('feedbackFailed'));
	}
}

// Sessions

async function ensureSession() {
	if (state.sessionId) return state.sessionId;
	const gen = state.gen;
	const res = await call('POST', `/widget/${encodeURIComponent(slug)}/sessions`, {});
	if (gen !== state.gen) throw new Error('stale');
	state.sessionId = res.sessionId;
	storeSession(res.sessionId);
	if (typeof res.humanAvailable === 'boolean') state.humanAvailable = res.humanAvailable;
	setStatus(res.status || 'AI');
	startLive(gen);
	return state.sessionId;
}

// pollAll reads the session's messages after `after` ('' for all), page by
// page, and returns its status.
async function pollAll(after, each) {
	let res;
	for (let i = 0; i < 50; i++) {
		res = await call('GET', `/chat/${state.sessionId}/poll?limit=100${after ? '&after=' + encodeURIComponent(after) : ''}`);
		const list = res.messages || [];
		list.forEach(each);
		if (!res.hasMore || !list.length) break;
		after = list[list.length - 1].id;
	}
	return res.status;
}

// restore shows a stored session's history again (after a reload).
async function restore() {
	const gen = state.gen;
	state.sessionId = storedSession();
	if (!state.sessionId) return;
	let status;
	try {
		status = await pollAll('', (m) => gen === state.gen && addMessage(m));
	} catch (e) {
		if (gen === state.gen && [400, 401, 403, 404].includes(e.status)) {
			// Gone, or another user's: start afresh.
			state.sessionId = '';
			storeSession('');
			renderWelcome();
		}
		if (e.status !== 0) return;
	}
	if (gen !== state.gen) return;
	setStatus(status || 'AI');
	scrollDown(true);
	startLive(gen);
}

function stopLive() {
	if (state.live) state.live.abort();
	state.live = null;
	state.liveOpen = false;
	clearTimeout(state.pollTimer);
	state.pollTimer = 0;
}

function newConversation(byUser) {
	state.gen++;
	stopLive();
	state.sessionId = '';
	state.lastMessageId = '';
	state.lastEventId = '';
	state.sending = false;
	state.humanAvailable = null;
	storeSession('');
	renderWelcome();
	setStatus('AI');
	showError('');
	closeHandoff(false);
	setBusy(false);
	if (byUser) {
		announce(t('newConversationDone'));
		ui.input.focus();
	}
}

// Sending and the answer stream

// While an answer streams the log is busy: screen readers read it when done.
function setBusy(busy) {
	ui.log.setAttribute('aria-busy', String(busy));
	ui.send.disabled = busy;
	app.dataset.busy = String(busy);
}

async function send(raw) {
	const text = String(raw || '').trim();
	if (!text || state.sending) return;
	if (text.length > MAX_CHARS) { showError(t('errorTooLong', { max: MAX_CHARS })); return; }
	showError('');
	const gen = state.gen;
	state.sending = true;
	setBusy(true);
	ui.input.value = '';
	autoGrow();
	const userView = addMessage({ role: 'USER', content: text });
	state.pendingUser.push(userView);
	let answer = null;
	try {
		const sid = await ensureSession();
		const res = await call('POST', `/chat/${sid}/message`, { message: text, stream: true }, { raw: true, headers: { Accept: 'text/event-stream' } });
		if (gen !== state.gen) return;
		let failed = false;
		await readSSE(res, (data, eventId, arrivedAt) => {
			if (gen !== state.gen) return;
			if (eventId) state.lastEventId = eventId;
			switch (data.type) {
				case 'message':
					if (data.message && data.message.role === 'USER') bindId(userView, data.message.id);
					break;
				case 'token': {
					if (!answer) {
						answer = answerView(idOf(eventId));
						answer.metric = { messageId: answer.id, bytesAt: arrivedAt, visibleAt: null, delayMs: null };
						metrics.answers.push(answer.metric);
					}
					if (answer.final) break;
					answer.text += data.content || '';
					scheduleRender(answer);
					break;
				}
				case 'done':
					if (data.messageId) {
						if (!answer) answer = answerView(data.messageId);
						else bindId(answer, data.messageId);
						finishAnswer(answer, { id: data.messageId, content: data.message, citations: data.citations, offerHandoff: data.offerHandoff });
					}
					break;
				case 'error':
					failed = true;
					break;
			}
		});
		if (gen !== state.gen) return;
		if (failed || (answer && !answer.final)) {
			if (answer) answer.node.classList.remove('cw-streaming');
			showError(t('errorAnswer'));
		}
	} catch (e) {
		if (gen !== state.gen || e.name === 'AbortError' || e.message === 'stale') return;
		if (!userView.id) {
			userView.node.classList.add('cw-msg--failed');
			state.pendingUser = state.pendingUser.filter((v) => v !== userView);
			userView.node.append(el('p', { class: 'cw-failed' }, t('notSent') + ' ',
				el('button', { class: 'cw-link-button', text: t('retry'), onclick: () => { userView.node.remove(); send(text); } })));
		}
		showError(errorText(e));
	} finally {
		if (gen === state.gen) {
			state.sending = false;
			setBusy(false);
		}
	}
}

// Live stream (HUMAN replies, status changes), poll as the fallback

function startLive(gen) {
	if (state.live || !state.sessionId) return;
	liveLoop(gen);
}

async function liveLoop(gen) {
	let failures = 0;
	while (gen === state.gen && state.sessionId) {
		const ctrl = new AbortController();
		state.live = ctrl;
		let opened = false;
		try {
			const res = await call('GET', `/chat/${state.sessionId}/events`, undefined, {
				raw: true, signal: ctrl.signal,
				headers: { Accept: 'text/event-stream', ...(state.lastEventId ? { 'Last-Event-ID': state.lastEventId } : {}) },
			});
			if (gen !== state.gen) return;
			opened = true;
			failures = 0;
			state.liveOpen = true;
			clearTimeout(state.pollTimer);
			state.pollTimer = 0;
			pollOnce(gen); // catch up on anything between the history and this stream
			await readSSE(res, (data, eventId) => onLiveEvent(gen, data, eventId));
		} catch (e) {
			if (e.name === 'AbortError' || gen !== state.gen) return;
			if (e instanceof APIError && e.status === 400) state.lastEventId = '';
			if (e instanceof APIError && e.status === 404) return;
		}
		state.liveOpen = false;
		if (gen !== state.gen) return;
		if (!opened) failures++;
		if (!state.pollTimer) pollLoop(gen);
		await sleep(Math.min(1000 * 2 ** failures, 15000));
	}
}

function onLiveEvent(gen, data, eventId) {
	if (gen !== state.gen) return;
	if (eventId) state.lastEventId = eventId;
	const id = idOf(eventId);
	switch (data.type) {
		case 'message':
			if (data.message && data.message.id) adoptOrAdd(data.message);
			break;
		case 'status':
			if (id && !state.byId.has(id)) addNotice(id, data.status);
			setStatus(data.status);
			break;
		case 'error': {
			// An answer whose server stopped ends here, on whichever stream
			// still follows it (the POST stream died with its server).
			const view = id && state.byId.get(id);
			if (view && !view.final && view.role === 'ASSISTANT') {
				finishAnswer(view, { id, content: view.text, fallbackReason: 'INTERRUPTED' });
				if (!state.sending) showError('');
			}
			break;
		}
		case 'done': {
			// Our own answers arrive on the POST stream (tokens too): this is
			// another tab's, shown whole.
			if (state.sending || !data.messageId) break;
			const view = state.byId.get(data.messageId);
			if (view && view.final) break;
			finishAnswer(view || answerView(data.messageId), { id: data.messageId, content: data.message, citations: data.citations, offerHandoff: data.offerHandoff });
			break;
		}
	}
}

async function pollOnce(gen) {
	if (!state.sessionId) return;
	const sets = state.statusSets;
	try {
		const status = await pollAll(state.lastMessageId, (m) => {
			// An answer still streaming on our POST arrives through it.
			if (gen === state.gen && !(m.role === 'ASSISTANT' && state.sending)) adoptOrAdd(m);
		});
		// A status set while the poll was out (a live status event, the
		// handoff's answer) is as new as the one the poll read, or newer:
		// the poll's would put back a state the conversation has left (the
		// widget saying "waiting" to a visitor a person is talking to),
		// and nothing would correct it until the next change. A change
		// the poll saw after it comes live, or with the next poll.
		if (gen === state.gen && status && status !== state.status && sets === state.statusSets) setStatus(status);
	} catch { /* the next round */ }
}

async function pollLoop(gen) {
	const tick = async () => {
		if (gen !== state.gen || state.liveOpen) { state.pollTimer = 0; return; }
		await pollOnce(gen);
		if (gen !== state.gen || state.liveOpen) { state.pollTimer = 0; return; }
		state.pollTimer = setTimeout(tick, POLL_INTERVAL_MS);
	};
	state.pollTimer = setTimeout(tick, 0);
}

// Handoff

function openHandoff() {
	ui.handoff.hidden = false;
	ui.handoffError.hidden = true;
	renderAvailability();
	ui.handoffName.focus();
	refreshAvailability();
}

// refreshAvailability asks whether a person is available now, for the
// open handoff form. Opening the form is asking for a person, so it opens
// the session when there is none yet. A failure keeps what was known: the
// form works either way, and the server accepts the request regardless.
async function refreshAvailability() {
	const gen = state.gen;
	try {
		const sid = await ensureSession();
		const res = await call('GET', `/chat/${sid}/availability`);
		if (gen !== state.gen) return;
		state.humanAvailable = res.humanAvailable !== false;
	} catch { /* keep the last answer */ }
	if (gen === state.gen) renderAvailability();
}

// renderAvailability shows the form for the last answer: when nobody is
// available it says so and requires an email, so someone can reply later.
function renderAvailability() {
	const nobody = state.humanAvailable === false;
	const intro = t(nobody ? 'handoffNobody' : 'handoffIntro');
	if (ui.handoffIntro.textContent !== intro) ui.handoffIntro.textContent = intro;
	ui.handoffEmail.required = nobody;
	ui.handoffEmailLabel.textContent = t(nobody ? 'handoffEmailRequired' : 'handoffEmail');
	ui.handoff.dataset.nobodyAvailable = String(nobody);
}

function closeHandoff(refocus = true) {
	if (!ui.handoff || ui.handoff.hidden) return;
	ui.handoff.hidden = true;
	if (refocus) (ui.handoffButton && !ui.handoffButton.hidden ? ui.handoffButton : ui.input).focus();
}

async function submitHandoff(e) {
	e.preventDefault();
	const body = {};
	if (ui.handoffName.value.trim()) body.name = ui.handoffName.value.trim();
	if (ui.handoffEmail.value.trim()) body.email = ui.handoffEmail.value.trim();
	if (state.humanAvailable === false && !body.email) {
		ui.handoffError.textContent = t('handoffEmailNeeded');
		ui.handoffError.hidden = false;
		ui.handoffEmail.focus();
		return;
	}
	const gen = state.gen;
	try {
		const sid = await ensureSession();
		const res = await call('POST', `/chat/${sid}/handoff`, body);
		if (gen !== state.gen) return;
		setStatus(res.status || 'HANDOFF_REQUESTED');
		closeHandoff(false);
		ui.input.focus();
		announce(t('status_' + state.status));
	} catch (err) {
		if (gen !== state.gen) return;
		let text = errorText(err);
		if (err instanceof APIError && err.status === 403) text = t('handoffUnavailable');
		if (err instanceof APIError && err.status === 409) text = t('handoffAlreadyHuman');
		ui.handoffError.textContent = text;
		ui.handoffError.hidden = false;
	}
}

// Identity from the host page

window.addEventListener('message', (e) => {
	if (e.source !== window.parent || window.parent === window) return;
	const d = e.data;
	if (!d || d.type !== 'concierge:identity') return;
	const id = makeIdentity(d.identity, d.signature);
	if (!id) return;
	if (state.identity && state.identity.identity === id.identity && state.identity.signature === id.signature) return;
	state.identity = id;
	// This user's own conversation (stored per user) or a new one.
	newConversation(false);
	restore();
});

// Start

applyTheme();
build();
renderWelcome();
setStatus('AI');
restore().finally(() => { window.conciergeWidget.ready = true; app.dataset.ready = 'true'; });
