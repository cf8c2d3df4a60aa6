// The events page: tell the socket where the page stands, on every (re)connect, so it sends
// what the page missed; keep the newest rows only (the script tag's data-rows-kept).
// "Pause" holds the pushes back (the rows stay still to be read) and counts the rows that
// wait; "Resume" applies them in order. A held push has not moved the page's cursor, so a
// socket that reconnects while paused is sent them again: the held ones are dropped then.
(() => {
  const kept = Number(document.currentScript.dataset.rowsKept);
  let held = [];     // the pushes not applied yet, oldest first
  let waiting = 0;   // the rows in them

  const pauseButton = () => document.getElementById("events-pause");
  const paused = () => pauseButton()?.getAttribute("aria-pressed") === "true";
  const trim = () => {
    const rows = document.querySelectorAll("#event-rows tr.event");
    for (let i = kept; i < rows.length; i++) { rows[i].remove(); }
  };
  const show = () => {
    const button = pauseButton();
    if (!button) { return; }
    button.textContent = paused() ? "Resume" : "Pause";
    document.getElementById("events-waiting").textContent =
      paused() ? `${waiting} new event${waiting === 1 ? "" : "s"} waiting` : "";
  };
  const drop = () => { held = []; waiting = 0; show(); };

  document.body.addEventListener("htmx:wsOpen", (event) => {
    const cursor = document.getElementById("events-cursor");
    if (cursor && event.detail.elt.contains(cursor)) {
      drop();
      event.detail.socketWrapper.send(JSON.stringify({after: Number(cursor.dataset.seq)}));
    }
  });
  document.body.addEventListener("htmx:wsBeforeMessage", (event) => {
    if (!paused() || !event.detail.elt.contains(pauseButton())) { return; }
    event.preventDefault();
    held.push(event.detail.message);
    waiting += (event.detail.message.match(/<tr id="event-/g) || []).length;
    show();
  });
  document.body.addEventListener("htmx:wsAfterMessage", trim);
  document.body.addEventListener("click", (event) => {
    const button = pauseButton();
    if (!button || event.target !== button) { return; }
    button.setAttribute("aria-pressed", String(!paused()));
    if (!paused()) {
      // Each push is out-of-band swaps only (rows on top, the cursor, a notice).
      for (const message of held) { htmx.swap("#event-list", message, {swapStyle: "none"}); }
      trim();
      drop();
    }
    show();
  });
})();
