// The events page: tell the socket where the page stands, on every (re)connect, so it sends
// what the page missed; keep the newest rows only (the script tag's data-rows-kept).
(() => {
  const kept = Number(document.currentScript.dataset.rowsKept);
  document.body.addEventListener("htmx:wsOpen", (event) => {
    const cursor = document.getElementById("events-cursor");
    if (cursor && event.detail.elt.contains(cursor)) {
      event.detail.socketWrapper.send(JSON.stringify({after: Number(cursor.dataset.seq)}));
    }
  });
  document.body.addEventListener("htmx:wsAfterMessage", () => {
    const rows = document.querySelectorAll("#event-rows tr.event");
    for (let i = kept; i < rows.length; i++) { rows[i].remove(); }
  });
})();
