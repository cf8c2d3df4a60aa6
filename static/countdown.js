// Counts every [data-deadline] down once a second (PodRow.expiry's words), swapped-in rows
// included. The script tag's data-now is the server's epoch seconds at render, so a skewed
// browser clock counts right.
(() => {
  const skew = Number(document.currentScript.dataset.now) - Date.now() / 1000;
  setInterval(() => {
    const now = Date.now() / 1000 + skew;
    for (const el of document.querySelectorAll("[data-deadline]")) {
      const left = Math.round(Number(el.dataset.deadline) - now);
      el.textContent = left >= 0 ? `expires in ${left} s` : `expiry overdue by ${-left} s`;
    }
  }, 1000);
})();
