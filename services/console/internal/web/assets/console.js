// The board reloads its figures every data-refresh milliseconds; nothing
// else on the console needs script.
(function () {
  var box = document.getElementById("figures");
  if (!box) return;
  var every = parseInt(box.dataset.refresh, 10) || 5000;
  setInterval(function () {
    fetch("/board/figures", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) { box.innerHTML = html; })
      .catch(function () { /* keep the last figures; the next tick tries again */ });
  }, every);
})();
