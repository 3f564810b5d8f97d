// The console's only script of its own. Pages work without it; it adds
// the session's CSRF token to htmx requests and copy buttons. No inline
// scripts or handlers anywhere: the CSP allows only files from 'self'.
"use strict";

document.addEventListener("htmx:configRequest", (event) => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) {
    event.detail.headers["X-CSRF-Token"] = meta.content;
  }
});

// A refused form comes back with its fields marked: the first takes the
// focus, which scrolls it into view, so a keyboard or screen-reader user
// lands on what to correct rather than at the top of a long page.
document.addEventListener("DOMContentLoaded", () => {
  const invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid) {
    invalid.focus();
  }
});

// Copy buttons: <button data-copy="id-of-element" data-copied="text">
// start hidden and appear only where the clipboard API is available.
document.addEventListener("DOMContentLoaded", () => {
  if (!navigator.clipboard) {
    return;
  }
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    const label = button.textContent;
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) {
        return;
      }
      await navigator.clipboard.writeText(source.textContent);
      button.textContent = button.dataset.copied || label;
      setTimeout(() => { button.textContent = label; }, 2000);
    });
  }
});

// Knowledge: file uploads with per-file progress and drag and drop, and
// the polled list of sources. Without this script the upload form posts
// its files together and the page shows the list as it was.
document.addEventListener("DOMContentLoaded", () => {
  for (const form of document.querySelectorAll("form[data-upload]")) {
    setUpUpload(form);
  }
});

// The list's summary is read out (aria-live) only when it changes, not at
// every poll.
document.addEventListener("htmx:afterSettle", () => {
  const sources = document.getElementById("sources");
  const live = document.getElementById("sources-live");
  if (sources && live && live.textContent !== sources.dataset.summary) {
    live.textContent = sources.dataset.summary;
  }
});

// A list that cannot be fetched any more (the agent was deleted in
// another tab) stops polling: a copy without its htmx attributes replaces
// it, and htmx polls only elements still in the page.
document.addEventListener("htmx:responseError", (event) => {
  const sources = event.detail.elt;
  if (sources && sources.id === "sources") {
    const still = sources.cloneNode(true);
    still.removeAttribute("hx-get");
    still.removeAttribute("hx-trigger");
    sources.replaceWith(still);
  }
});

function refreshSources() {
  const sources = document.getElementById("sources");
  if (sources && window.htmx) {
    window.htmx.ajax("GET", sources.dataset.list, { target: sources, swap: "outerHTML" });
  }
}

// failureReason reads why the console refused an upload from the page it
// answered with: the file field's error, or the page's. Only that field's:
// the page also lists the agent's sources, a failed one with its reason.
function failureReason(xhr, list) {
  if (xhr.status === 413) {
    return list.dataset.toolarge; // refused before the console saw it
  }
  const page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
  const message = page.querySelector("#f-file-error") || page.querySelector(".error p");
  return message ? message.textContent.trim() : String(xhr.status);
}

function setUpUpload(form) {
  const input = form.querySelector('input[type="file"]');
  const list = form.querySelector("[data-upload-list]");
  const zone = form.querySelector("[data-dropzone]");
  const token = form.querySelector('input[name="csrf"]');
  if (!input || !list || !token) {
    return;
  }
  const hint = form.querySelector("[data-drop-hint]");
  if (hint) {
    hint.hidden = false;
  }

  // One request per file, one after another: each has its own progress
  // and its own answer, and large bodies do not queue on the server.
  const uploadOne = (file) => new Promise((resolve) => {
    const item = document.createElement("li");
    const name = document.createElement("span");
    name.textContent = file.name + " ";
    const bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", file.name);
    const state = document.createElement("span");
    state.textContent = " " + list.dataset.sending;
    item.append(name, bar, state);
    list.append(item);
    if (file.size > Number(list.dataset.maxBytes)) {
      item.classList.add("failed");
      state.textContent = " " + list.dataset.failed + list.dataset.toolarge;
      resolve();
      return;
    }

    const body = new FormData();
    body.append("csrf", token.value);
    body.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("X-CSRF-Token", token.value);
    // Answered with 204 and HX-Redirect instead of a redirect to a page.
    xhr.setRequestHeader("HX-Request", "true");
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) {
        bar.value = Math.round((100 * event.loaded) / event.total);
      }
    });
    xhr.addEventListener("load", () => {
      const moved = xhr.getResponseHeader("HX-Redirect") || "";
      if (moved.includes("/sign-in")) {
        window.location.assign(moved); // the session ended: sign in again
        return;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        bar.value = 100;
        state.textContent = " " + list.dataset.done;
      } else {
        item.classList.add("failed");
        state.textContent = " " + list.dataset.failed + failureReason(xhr, list);
      }
      resolve();
    });
    xhr.addEventListener("error", () => {
      item.classList.add("failed");
      state.textContent = " " + list.dataset.failed;
      resolve();
    });
    xhr.send(body);
  });

  const send = async (files) => {
    for (const file of files) {
      await uploadOne(file);
      refreshSources();
    }
  };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const files = Array.from(input.files);
    input.value = "";
    send(files);
  });
  if (!zone) {
    return;
  }
  // A file dropped beside the zone would make the browser leave the page
  // to show it; only the zone takes files (text still drops into fields).
  for (const type of ["dragover", "drop"]) {
    document.addEventListener(type, (event) => {
      const files = event.dataTransfer && Array.from(event.dataTransfer.types).includes("Files");
      if (files && !zone.contains(event.target)) {
        event.preventDefault();
      }
    });
  }
  for (const type of ["dragenter", "dragover"]) {
    zone.addEventListener(type, (event) => {
      event.preventDefault();
      zone.classList.add("dragging");
    });
  }
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    send(Array.from(event.dataTransfer.files));
  });
}

// Playground: the answer appears as it is written. The form posts with
// fetch to its data-stream endpoint, which answers with Server-Sent
// Events (the question, tokens, then done or error); then the page of the
// conversation replaces this one's main content, with the answer's
// sources and retrieval trace. Without this script the form posts and the
// server redirects to that page when the answer is complete.
document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector("form[data-stream]");
  if (form) {
    setUpPlayground(form);
  }
});

// shownPage is the address whose page is shown. The answered page is put
// in place with pushState; going back or forward to another address loads
// its page (a link to an anchor, like the skip link, stays).
let shownPage = window.location.pathname + window.location.search;
window.addEventListener("popstate", () => {
  if (window.location.pathname + window.location.search !== shownPage) {
    window.location.reload();
  }
});

// newPlaygroundKey makes an idempotency key like the server's: the same
// key with another question would be refused.
function newPlaygroundKey() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return "pgq_" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// readEvents calls onEvent with each SSE data object of a fetch response
// as it arrives; comments (the heartbeat) and ids are skipped.
async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      return;
    }
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6)).join("\n");
      if (data) {
        onEvent(JSON.parse(data));
      }
    }
  }
}

function setUpPlayground(form) {
  const button = form.querySelector('button[type="submit"]');
  const status = form.querySelector("[data-play-status]");
  const question = form.querySelector('textarea[name="question"]');
  const key = form.querySelector('input[name="key"]');
  const token = form.querySelector('input[name="csrf"]');
  const live = document.querySelector("[data-play-live]");
  if (!button || !status || !question || !key || !token || !live) {
    return;
  }
  const liveQuestion = live.querySelector("[data-play-question]");
  const liveAnswer = live.querySelector("[data-play-answer]");
  // sent is the question the key went with: an edited question gets a
  // new key, the same one sent again keeps it (and is answered once).
  let sent = null;
  let busy = false;

  const setBusy = (on) => {
    busy = on;
    button.disabled = on;
    form.setAttribute("aria-busy", on ? "true" : "false");
  };
  const fail = (reason) => {
    setBusy(false);
    live.hidden = true;
    status.textContent = [form.dataset.failed, reason, form.dataset.kept].filter(Boolean).join(" ");
    question.focus();
  };

  // show replaces the main content with the conversation's page, as the
  // redirect without this script would, and says the answer is there.
  const show = async (session) => {
    const url = new URL(form.action, window.location.href);
    url.searchParams.set("session", session);
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) {
      window.location.assign(url.toString() + "#latest");
      return;
    }
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const main = page.querySelector("main");
    document.querySelector("main").replaceWith(main);
    document.title = page.title;
    shownPage = url.pathname + url.search;
    window.history.pushState(null, "", shownPage);
    const next = main.querySelector("form[data-stream]");
    if (next) {
      setUpPlayground(next);
      const done = next.querySelector("[data-play-status]");
      // Set after the region is in the page, so it is announced.
      setTimeout(() => { done.textContent = next.dataset.answered; }, 50);
    }
    const latest = main.querySelector("#latest");
    if (latest) {
      latest.scrollIntoView({ block: "start" });
    }
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy) {
      return; // a double click sends one question
    }
    if (!form.reportValidity()) {
      return;
    }
    if (sent !== null && sent !== question.value) {
      key.value = newPlaygroundKey();
    }
    sent = question.value;
    setBusy(true);
    status.textContent = form.dataset.answering;
    liveQuestion.textContent = question.value;
    liveAnswer.textContent = "";
    liveAnswer.setAttribute("aria-busy", "true");
    live.hidden = false;

    let response;
    try {
      response = await fetch(form.dataset.stream, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { "X-CSRF-Token": token.value, Accept: "text/event-stream" },
        credentials: "same-origin",
      });
    } catch {
      fail(form.dataset.network);
      return;
    }
    if (response.redirected && response.url.includes("/sign-in")) {
      window.location.assign(response.url); // the session ended: sign in again
      return;
    }
    if (!response.ok || !(response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      // Refused: the page says why, next to the field or at its top.
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const message = page.querySelector(".field-error") || page.querySelector(".error p");
      fail(message ? message.textContent.trim() : String(response.status));
      return;
    }
    const going = form.querySelector('input[name="session"]');
    let session = going ? going.value : "";
    let problem = "";
    try {
      await readEvents(response, (data) => {
        if (data.type === "token") {
          liveAnswer.textContent += data.content;
        } else if (data.type === "done") {
          session = data.sessionId || session;
        } else if (data.type === "error") {
          problem = data.message || "";
        }
      });
    } catch {
      problem = problem || form.dataset.network;
    }
    liveAnswer.removeAttribute("aria-busy");
    if (problem || !session) {
      fail(problem || form.dataset.network);
      return;
    }
    try {
      await show(session);
    } catch {
      window.location.reload();
    }
  });
}
