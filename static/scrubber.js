// The header's scrubber (templates/base.html): a range over the kept moments by sequence
// number. Moving it says which moment is under the thumb; letting go of it (or Enter, as
// arrow keys move it a step at a time) shows the current page at that moment, its filters
// kept but not its place in a list (a cursor or page of another moment means nothing).
(function () {
  function go(range) {
    const target = new URL(range.form.getAttribute("action"), window.location.href);
    if (target.pathname === window.location.pathname) {
      new URLSearchParams(window.location.search).forEach((value, key) => {
        if (!["at", "cursor", "page"].includes(key)) target.searchParams.append(key, value);
      });
    }
    target.searchParams.set("at", range.value);
    window.location.assign(target);
  }

  function show(range) {
    const text = range.value === range.dataset.latest ? "latest" : "seq " + range.value;
    document.getElementById(range.getAttribute("aria-describedby")).textContent = text;
    range.setAttribute("aria-valuetext", text);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const range = document.querySelector("input.scrubber");
    if (!range) return;
    let byKey = false;      // keys move it step by step: they go on Enter, not on each step
    range.addEventListener("pointerdown", () => { byKey = false; });
    range.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        go(range);
      } else {
        byKey = true;
      }
    });
    range.addEventListener("input", () => show(range));
    range.addEventListener("change", () => { if (!byKey) go(range); });
  });
})();
