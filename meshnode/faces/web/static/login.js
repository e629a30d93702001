// The login link is /login#t=TOKEN: the fragment never reaches a server, a log or a Referer.
// Read it, trade it for a session cookie, drop it from the address bar and history, go to /.
import { ApiError, get, post } from "./api.js";

const status = document.getElementById("login-status");
const help = document.getElementById("login-help");
const form = document.getElementById("login-form");

async function login(token) {
  status.textContent = "Logging in…";
  try {
    await post("/api/login", { token });
    location.replace("/");
  } catch (err) {
    const reason = err instanceof ApiError ? err.reason : String(err);
    status.textContent = `Not logged in: ${reason}`;
    help.hidden = false;
    form.hidden = false;
  }
}

function tokenFromLink() {
  const token = new URLSearchParams(location.hash.slice(1)).get("t");
  history.replaceState(null, "", location.pathname + location.search);  // the token leaves the address bar
  return token;
}

// The link pasted into a tab already on /login changes only the fragment: no reload, so listen for it.
window.addEventListener("hashchange", () => {
  const again = tokenFromLink();
  if (again) login(again);
});

const token = tokenFromLink();
if (token) {
  login(token);
} else {
  get("/api/session").then((session) => {
    if (session.via === "cookie") {
      location.replace("/");  // already logged in
      return;
    }
    status.textContent = "Not logged in.";
    help.hidden = false;
    form.hidden = false;
  }, () => {
    status.textContent = "The node does not answer.";
  });
}
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const value = document.getElementById("login-token").value.trim();
  if (value) login(value);
});
