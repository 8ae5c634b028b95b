// The callstream console's only script (beside htmx): it keeps the operator's token for
// this browser session only (sessionStorage, gone when the tab closes), sends it and the
// operator's time zone with every request htmx makes, sends the operator to the login page
// when the token is refused, and holds a list's refresh while someone types in a form.
(function () {
  "use strict";
  var KEY = "callstream.token";
  var zone = "UTC";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch (e) {}
  var onLogin = location.pathname === "/console/login";

  function toLogin(why) {
    var next = location.pathname + location.search + location.hash;
    location.replace("/console/login?next=" + encodeURIComponent(next) + (why ? "&" + why + "=1" : ""));
  }

  if (!onLogin && !sessionStorage.getItem(KEY)) {
    toLogin("");
    return;
  }

  htmx.config.allowEval = false;
  htmx.config.includeIndicatorStyles = false;
  // Error answers carry an HTML fragment saying what was refused: show it (401 aside).
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "401", swap: false, error: true },
    { code: "[45]..", swap: true, error: true },
  ];

  document.addEventListener("htmx:configRequest", function (e) {
    var token = sessionStorage.getItem(KEY);
    if (token) e.detail.headers["Authorization"] = "Bearer " + token;
    e.detail.headers["X-Console-Zone"] = zone;
  });

  document.addEventListener("htmx:responseError", function (e) {
    if (e.detail.xhr.status === 401 && !onLogin) {
      sessionStorage.removeItem(KEY);
      toLogin("expired");
    }
  });

  // A list refreshes itself every few seconds, but not while the operator is typing a
  // reason or picking a time in it (that would throw the input away), nor while an action's
  // form is open. A focused button does not count: a clicked button keeps the focus.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var elt = e.detail.elt;
    if (!elt.hasAttribute || !elt.hasAttribute("data-refresh")) return;
    var active = document.activeElement;
    var typing = active && elt.contains(active) && active.matches("input:not([type=hidden]), textarea, select");
    if (typing || elt.querySelector("details[open] form")) e.preventDefault();
  });

  // Once an action's form is sent, its drop-down closes (and the list may refresh again).
  document.addEventListener("htmx:afterRequest", function (e) {
    var details = e.detail.elt.closest && e.detail.elt.closest("details");
    if (details && e.detail.elt.tagName === "FORM") details.open = false;
  });

  document.addEventListener("DOMContentLoaded", function () {
    var logout = document.getElementById("logout");
    if (logout) {
      logout.addEventListener("click", function () {
        sessionStorage.removeItem(KEY);
        location.replace("/console/login");
      });
    }
    var zoneLabel = document.getElementById("operator-zone");
    if (zoneLabel) zoneLabel.textContent = zone;
    var form = document.getElementById("login");
    if (!form) return;
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var token = form.elements["token"].value.trim();
      var status = document.getElementById("login-status");
      status.textContent = "Checking the token…";
      fetch("/console/f/whoami", { headers: { Authorization: "Bearer " + token } }).then(function (r) {
        if (r.ok) {
          sessionStorage.setItem(KEY, token);
          var next = new URLSearchParams(location.search).get("next") || "/console/today";
          // Only a path of this console, never another site.
          if (next.indexOf("/console/") !== 0) next = "/console/today";
          location.replace(next);
        } else if (r.status === 401) {
          status.textContent = "That token is not valid (unknown, expired or revoked).";
        } else {
          status.textContent = "The console answered " + r.status + "; try again.";
        }
      }, function () {
        status.textContent = "The console cannot be reached; try again.";
      });
    });
  });
})();
