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
// answered with (the field's error, or the page's).
function failureReason(xhr, list) {
  if (xhr.status === 413) {
    return list.dataset.toolarge; // refused before the console saw it
  }
  const page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
  const message = page.querySelector(".field-error") || page.querySelector(".error p");
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
