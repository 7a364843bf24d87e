// Keyboard shortcuts of the annotator's queue: a key clicks the button that shows it (data-key), so a
// keypress does exactly what the click would, with or without htmx. One request at a time. A button with
// data-focus moves the focus to that field instead (c: the comment box); Esc in a text box leaves it, so the
// keys work again.
(function () {
  let busy = false;
  document.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });
  document.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest("#queue-item button[data-focus]");
    if (!button) return;
    const field = document.getElementById(button.dataset.focus);
    if (field) field.focus();
  });
  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (event.key === "Escape" && target && target.tagName === "TEXTAREA" && target.closest("#queue-item")) {
      target.blur();
      return;
    }
    if (busy || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
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
