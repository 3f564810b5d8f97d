// The inbox's script, loaded on the inbox and thread pages only. Both work
// without it (plain pages, reload to see news); it adds:
// - live updates from the workspace event stream (EventSource on
//   data-events): the list, or the thread's transcript and ownership bar,
//   are fetched again and swapped in; an unread count in the nav badge and
//   the tab title; an optional beep (off by default, remembered in
//   localStorage, made with Web Audio: nothing to download); a browser
//   notification once the member clicked "Enable notifications";
// - the composer's saved replies: "/" at the start of the message opens a
//   listbox filtered as you type (up, down, Enter, Escape);
// - "Suggest a reply": a draft from the agent put in the message box,
//   never sent by itself, with the sources it cites listed under the
//   composer (cleared by the next suggestion and when the message is sent).
// No inline scripts or handlers: the CSP allows only files from 'self'.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("inbox") || document.getElementById("thread");
  if (!root) {
    return;
  }
  const live = setUpLive(root);
  if (root.id === "thread") {
    setUpSavedReplies();
    setUpSuggest(root);
  }
  return live;
});

const soundKey = "concierge.inbox.sound";

function setUpLive(root) {
  const badge = document.getElementById("inbox-badge");
  const baseTitle = document.title;
  let unread = 0;
  const setUnread = (n) => {
    unread = n;
    if (badge) {
      badge.textContent = n ? String(n) : "";
      badge.hidden = n === 0;
    }
    document.title = n ? "(" + n + ") " + baseTitle : baseTitle;
  };
  const seen = () => { if (!document.hidden) { setUnread(0); } };
  document.addEventListener("visibilitychange", seen);
  window.addEventListener("focus", seen);

  const controls = document.getElementById("inbox-controls");
  const sound = document.getElementById("inbox-sound");
  const notifyButton = document.getElementById("inbox-notify");
  const liveText = document.getElementById("inbox-live");
  if (controls) {
    controls.hidden = false;
  }
  if (sound) {
    sound.checked = localStorage.getItem(soundKey) === "on";
    sound.addEventListener("change", () => {
      localStorage.setItem(soundKey, sound.checked ? "on" : "off");
      if (sound.checked) {
        beep(); // the click lets the browser start audio, and shows what it sounds like
      }
    });
  }
  if (notifyButton) {
    const show = () => {
      const on = "Notification" in window && Notification.permission === "granted";
      notifyButton.hidden = !("Notification" in window) || on;
      if (liveText && "Notification" in window && Notification.permission === "denied") {
        notifyButton.hidden = true;
      }
    };
    show();
    notifyButton.addEventListener("click", () => {
      Notification.requestPermission().then(show);
    });
  }

  const url = root.dataset.events;
  if (!url || !window.EventSource) {
    return;
  }
  const thread = root.dataset.conversation || "";
  const refresh = debounce(() => {
    swap(thread ? ["thread-transcript", "thread-owner"] : ["inbox-tabs", "inbox-list"]);
  }, 250);
  const source = new EventSource(url);
  const onEvent = (event) => {
    let data = {};
    try {
      data = JSON.parse(event.data || "{}");
    } catch {
      return;
    }
    const here = thread !== "" && data.conversationId === thread;
    if (!thread || here || event.type === "reset") {
      refresh();
    }
    // News worth a badge: a visitor writing, a conversation asking for a
    // person; on a thread, only those of other conversations or while
    // the tab is hidden.
    const news = (event.type === "message.created" && data.message && data.message.role === "USER") ||
      (event.type === "conversation.status" && data.status === "HANDOFF_REQUESTED");
    if (news && (document.hidden || (thread && !here))) {
      setUnread(unread + 1);
      if (localStorage.getItem(soundKey) === "on") {
        beep();
      }
      notify(root.dataset.title || baseTitle, data.message ? data.message.content : "");
    }
  };
  for (const type of ["message.created", "conversation.status", "conversation.assigned", "reset"]) {
    source.addEventListener(type, onEvent);
  }
  // The page was rendered before the stream opened, and a stream without
  // a Last-Event-ID starts live from the moment it is subscribed: an event
  // in between (a visitor writing while the page loads) would be in
  // neither. The stream opens (its headers arrive) only once the server
  // subscribed, so a refresh from then on shows everything older, and the
  // stream brings everything newer. A reconnect opens again, and refreshes
  // over its own gap the same way.
  source.addEventListener("open", refresh);
  source.addEventListener("error", () => {
    if (liveText && source.readyState === EventSource.CLOSED) {
      liveText.textContent = liveText.dataset.off || liveText.textContent;
    }
  });
}

function debounce(fn, ms) {
  let timer = 0;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

// swaps numbers the refreshes, and shown is the newest one swapped in.
let swaps = 0;
let shown = 0;

// swap fetches the page again and replaces the elements with these ids,
// leaving the rest (a half-typed message, the focus) alone. Refreshes
// overlap when the server is slow, and their answers may come back in any
// order: one older than what is shown is dropped, or a page read before an
// event would replace the one read after it, and stay until the next event.
async function swap(ids) {
  const n = ++swaps;
  let html;
  try {
    const res = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!res.ok) {
      return;
    }
    html = await res.text();
  } catch {
    return;
  }
  if (n < shown) {
    return;
  }
  shown = n;
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const id of ids) {
    const now = document.getElementById(id);
    const next = doc.getElementById(id);
    if (now && next) {
      now.replaceWith(document.adoptNode(next));
    }
  }
}

function beep() {
  const Context = window.AudioContext || window.webkitAudioContext;
  if (!Context) {
    return;
  }
  try {
    const ctx = new Context();
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.frequency.value = 880;
    gain.gain.value = 0.05;
    osc.connect(gain);
    gain.connect(ctx.destination);
    osc.onended = () => ctx.close();
    osc.start();
    osc.stop(ctx.currentTime + 0.15);
  } catch {
    // No sound is better than a broken page.
  }
}

function notify(title, body) {
  if (!("Notification" in window) || Notification.permission !== "granted" || !document.hidden) {
    return;
  }
  try {
    new Notification(title, { body: (body || "").slice(0, 140), tag: "concierge-inbox" });
  } catch {
    // Some browsers allow notifications only from a service worker.
  }
}

// The composer's saved replies: a listbox under the message box, open
// while the message is "/" and what follows it (no line break yet).
function setUpSavedReplies() {
  const box = document.getElementById("f-content");
  const list = document.getElementById("replies-list");
  const status = document.getElementById("replies-status");
  const data = document.getElementById("saved-replies");
  if (!box || !list || !data) {
    return;
  }
  const replies = Array.from(data.querySelectorAll("li"), (li) => ({
    shortcut: li.dataset.shortcut || "", title: li.dataset.title || "", body: li.textContent || "",
  }));
  if (replies.length === 0) {
    return;
  }
  let shown = [];
  let active = -1;
  const close = () => {
    list.hidden = true;
    list.replaceChildren();
    shown = [];
    active = -1;
    box.removeAttribute("aria-activedescendant");
  };
  const highlight = (i) => {
    active = i;
    list.querySelectorAll("[role=option]").forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
    if (i >= 0) {
      const li = document.getElementById("reply-opt-" + i);
      box.setAttribute("aria-activedescendant", li.id);
      li.scrollIntoView({ block: "nearest" });
    }
  };
  const insert = (i) => {
    const r = shown[i];
    if (!r) {
      return;
    }
    box.value = r.body;
    close();
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  };
  const open = () => {
    const v = box.value;
    if (!v.startsWith("/") || v.includes("\n")) {
      close();
      return;
    }
    const q = v.slice(1).toLowerCase();
    shown = replies.filter((r) => r.shortcut.includes(q) || r.title.toLowerCase().includes(q)).slice(0, 20);
    list.replaceChildren();
    shown.forEach((r, i) => {
      const li = document.createElement("li");
      li.id = "reply-opt-" + i;
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", "false");
      const name = document.createElement("strong");
      name.textContent = "/" + r.shortcut + " ";
      const title = document.createElement("span");
      title.textContent = r.title;
      const body = document.createElement("span");
      body.className = "hint";
      body.textContent = r.body.slice(0, 80);
      li.append(name, title, body);
      li.addEventListener("mousedown", (e) => { e.preventDefault(); insert(i); });
      list.append(li);
    });
    list.hidden = false;
    if (status) {
      status.textContent = shown.length ? (status.dataset.count || "").replace("%d", String(shown.length)) : (status.dataset.none || "");
    }
    if (shown.length === 0) {
      const li = document.createElement("li");
      li.setAttribute("aria-disabled", "true");
      li.textContent = status ? status.dataset.none : "";
      list.append(li);
    }
    highlight(shown.length ? 0 : -1);
  };
  box.addEventListener("input", open);
  box.addEventListener("blur", close);
  box.addEventListener("keydown", (e) => {
    if (list.hidden) {
      return;
    }
    switch (e.key) {
    case "ArrowDown":
      e.preventDefault();
      if (shown.length) { highlight((active + 1) % shown.length); }
      break;
    case "ArrowUp":
      e.preventDefault();
      if (shown.length) { highlight((active - 1 + shown.length) % shown.length); }
      break;
    case "Enter":
      if (active >= 0) {
        e.preventDefault();
        insert(active);
      }
      break;
    case "Escape":
      e.preventDefault();
      close();
      break;
    }
  });
}

// "Suggest a reply": POST with the session's CSRF token; the draft goes in
// the message box as a reply, for the member to read, edit and send.
function setUpSuggest(root) {
  const button = document.getElementById("suggest");
  const box = document.getElementById("f-content");
  const status = document.getElementById("suggest-status");
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (!button || !box || !root.dataset.suggest || !meta) {
    return;
  }
  button.hidden = false;
  const say = (text) => { if (status) { status.textContent = text || ""; } };
  const sources = document.getElementById("suggest-sources");
  const list = document.getElementById("suggest-sources-list");
  const clearSources = () => {
    if (list) { list.replaceChildren(); }
    if (sources) { sources.hidden = true; }
  };
  const form = document.getElementById("composer-form");
  if (form) {
    // Sending the message (the draft or anything else) ends the suggestion.
    form.addEventListener("submit", clearSources);
  }
  button.addEventListener("click", async () => {
    button.disabled = true;
    clearSources();
    say(button.dataset.busy);
    try {
      const res = await fetch(root.dataset.suggest, {
        method: "POST", credentials: "same-origin",
        headers: { "X-CSRF-Token": meta.content, Accept: "application/json" },
      });
      const data = res.ok ? await res.json() : null;
      if (!data || typeof data.draft !== "string" || data.draft === "") {
        say(button.dataset.failed);
        return;
      }
      box.value = data.draft;
      const reply = document.querySelector('input[name="kind"][value="reply"]');
      if (reply) {
        reply.checked = true;
      }
      box.focus();
      const n = showSources(list, Array.isArray(data.citations) ? data.citations : []);
      if (sources) { sources.hidden = n === 0; }
      let done = button.dataset.done || "";
      if (n === 1) {
        done += " " + (button.dataset.citedOne || "");
      } else if (n > 1) {
        done += " " + (button.dataset.cited || "").replace("%d", String(n));
      }
      say(done.trim());
    } catch {
      clearSources();
      say(button.dataset.failed);
    } finally {
      button.disabled = false;
    }
  });
}

// showSources fills list with one item per cited source (several passages
// of one source are one item) and returns how many. Titles and addresses
// come from documents and crawled pages, so they are set as text only,
// and only an http(s) address becomes a link (never javascript: or data:);
// the link opens in a new tab so the draft in the box is not lost.
function showSources(list, citations) {
  if (!list) {
    return 0;
  }
  const seen = new Set();
  for (const c of citations) {
    if (!c || typeof c !== "object") {
      continue;
    }
    const title = typeof c.title === "string" ? c.title.trim() : "";
    const address = typeof c.url === "string" ? c.url.trim() : "";
    const key = typeof c.sourceId === "string" && c.sourceId !== "" ? c.sourceId : title + "\n" + address;
    if ((title === "" && address === "") || seen.has(key)) {
      continue;
    }
    seen.add(key);
    const li = document.createElement("li");
    const href = httpURL(address);
    if (href) {
      const a = document.createElement("a");
      a.href = href;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      a.textContent = title || address;
      li.append(a);
    } else {
      li.textContent = title || address;
    }
    list.append(li);
  }
  return list.children.length;
}

// httpURL returns address as an absolute http or https URL, or "" for
// anything else (relative, javascript:, data:, malformed).
function httpURL(address) {
  if (address === "") {
    return "";
  }
  try {
    const u = new URL(address);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : "";
  } catch {
    return "";
  }
}
