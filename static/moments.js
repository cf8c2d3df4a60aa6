// Every <time data-moment> in the viewer's local time with the zone named (to the
// millisecond where data-moment="ms"), the UTC time on hover (dashboard/templatetags/
// moments.py prints UTC). Watches the page, so fragments pushed over the live sockets or
// swapped by htmx are rewritten too.
(function () {
  const time = new Intl.DateTimeFormat(undefined, {hour: "2-digit", minute: "2-digit",
    second: "2-digit", hourCycle: "h23", timeZoneName: "short"});
  const precise = new Intl.DateTimeFormat(undefined, {hour: "2-digit", minute: "2-digit",
    second: "2-digit", fractionalSecondDigits: 3, hourCycle: "h23", timeZoneName: "short"});
  const date = new Intl.DateTimeFormat(undefined, {year: "numeric", month: "short", day: "numeric"});
  const today = () => date.format(new Date());

  function localize(element) {
    const moment = new Date(element.getAttribute("datetime"));
    if (isNaN(moment)) return;
    const day = date.format(moment);
    element.textContent = (day === today() ? "" : day + ", ") +
      (element.dataset.moment === "ms" ? precise : time).format(moment);
    element.removeAttribute("data-moment");   // done: a later swap brings a fresh one
  }

  function sweep(root) {
    if (root.matches && root.matches("time[data-moment]")) localize(root);
    if (root.querySelectorAll) root.querySelectorAll("time[data-moment]").forEach(localize);
  }

  document.addEventListener("DOMContentLoaded", () => {
    sweep(document.body);
    new MutationObserver((changes) => changes.forEach((change) =>
      change.addedNodes.forEach(sweep))).observe(document.body, {childList: true, subtree: true});
  });
})();
