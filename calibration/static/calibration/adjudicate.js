// Keys of the lead's adjudication page: a digit clicks the button that shows it (data-key) in the item that has
// the focus (else the first item to resolve), so a keypress does exactly what the click would; `n` moves
// to the next item to resolve. After an item is resolved, the focus goes to the next one to resolve.
(function () {
  let busy = false;
  function openItems() { return Array.from(document.querySelectorAll(".adjudication-item.open")); }
  function focusItem(item) { if (item) { item.focus(); item.scrollIntoView({ block: "start" }); } }
  function current() {
    const active = document.activeElement && document.activeElement.closest(".adjudication-item");
    return active || openItems()[0] || null;
  }
  document.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });
  document.addEventListener("htmx:afterSwap", function (event) {
    // An outerHTML swap replaced the target: the new card is the one with its id.
    const old = event.detail.target;
    const swapped = old && old.id ? document.getElementById(old.id) : null;
    if (!swapped || !swapped.classList.contains("adjudication-item")) return;
    if (swapped.querySelector("[role=alert]")) { focusItem(swapped); return; }
    const after = openItems().filter(function (item) {
      return swapped.compareDocumentPosition(item) & Node.DOCUMENT_POSITION_FOLLOWING;
    });
    focusItem(after[0] || openItems()[0] || swapped);
  });
  document.addEventListener("keydown", function (event) {
    if (busy || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.target;
    if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))) return;
    const key = event.key.toLowerCase();
    const item = current();
    if (!item) return;
    if (key === "n") {
      const items = openItems();
      const next = items[(items.indexOf(item) + 1) % items.length] || items[0];
      event.preventDefault();
      focusItem(next);
      return;
    }
    const button = item.querySelector('button[data-key="' + CSS.escape(key) + '"]');
    if (!button || button.disabled) return;
    event.preventDefault();
    if (window.htmx && button.form) window.htmx.process(button.form);
    button.click();
  });
})();
