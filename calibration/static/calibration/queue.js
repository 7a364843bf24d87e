// Keyboard shortcuts of the annotator's queue: a key clicks the button that shows it (data-key), so a
// keypress does exactly what the click would, with or without htmx. One request at a time.
(function () {
  let busy = false;
  document.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });
  document.addEventListener("keydown", function (event) {
    if (busy || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.target;
    if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))) return;
    const region = document.getElementById("queue-item");
    if (!region) return;
    const key = event.key.toLowerCase();
    const button = region.querySelector('button[data-key="' + CSS.escape(key) + '"]');
    if (!button || button.disabled) return;
    event.preventDefault();
    // A key pressed the instant a new item arrives must still go through htmx, not a full page post.
    if (window.htmx && button.form) window.htmx.process(button.form);
    button.click();
  });
})();
