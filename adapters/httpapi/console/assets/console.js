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
