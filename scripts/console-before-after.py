"""Before/after screenshots of issue #51's ten console problems (docs/console/before-after/).

The "before" console is the one of commit 6260806, the last before the issue's work on it. The
console is static ES-module JavaScript, so instead of building an old binary this script serves
those files themselves (`git show 6260806:crates/api/assets/console/<file>`) at `/` and `/ui/`,
with the paths, media types and Content-Security-Policy of that commit's
crates/api/src/handlers/console.rs, and passes every other request (`/v1/...`, the runs'
server-sent events chunk by chunk) to today's `aiden serve`. The API has only gained fields
since, so the old script behaves as it did. The "after" console is today's, through a second
port of the same proxy that passes everything, `/` and `/ui/` included, to the server.

Both shots of a pair go through the proxy, so the same slowness can be added to both: a message
POST held for a few seconds (pair 1), a search held (pair 8), as a slow server would. Two fixes
are in the API, not the console, so old JavaScript over today's API cannot show them:
- item 7 (a Tool's health): for the before console only, GET /v1/tools answers each Tool's
  stored `status` (read from the graph over Neo4j's HTTP API), which is what the API of 6260806
  answered; the after console gets today's answer, the Service's health;
- item 8's relevance floor (SRCH-6): not reproduced; pair 8 shows the search box instead.

Run by scripts/console-before-after.sh, which starts the server, a worker and the scripted model
(AIDEN_SERVER, AIDEN_MODEL_URL). Uses tests/console/test_console.py's browser and API helpers.
"""

import base64
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get("AIDEN_BEFORE_AFTER", os.path.join(ROOT, "docs/console/before-after"))
os.environ.setdefault("AIDEN_SCREENSHOTS", "/tmp/console-before-after-failures")
sys.path.insert(0, os.path.join(ROOT, "tests/console"))
import test_console as tc  # noqa: E402  (reads AIDEN_SERVER and AIDEN_MODEL_URL)

from PIL import Image  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

OLD = "6260806"
SERVER = urllib.parse.urlsplit(tc.BASE)
MODEL_URL = tc.MODEL_URL
ADMIN = os.environ["AIDEN_ADMIN_TOKEN"]
TAG = uuid.uuid4().hex[:6]
DESKTOP = (1280, 900)
PHONE = (390, 844)
MAX_BYTES = 250 * 1024

# What crates/api/src/handlers/console.rs of 6260806 sent with every console file.
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
          "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
MEDIA = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".html": "text/html; charset=utf-8"}
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host",
       "proxy-connection", "upgrade", "te", "trailer"}

# (method, path pattern, seconds): requests held before they go on, as a slow server would.
SLOW = []


def old_assets():
    """The console files of 6260806 by name: index.html at `/`, the rest at `/ui/<name>`."""
    folder = "crates/api/assets/console/"
    names = subprocess.run(["git", "ls-tree", "--name-only", OLD, folder], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {os.path.basename(n): subprocess.run(["git", "show", f"{OLD}:{n}"], cwd=ROOT, check=True,
                                                capture_output=True).stdout for n in names}


def stored_tool_status(ids):
    """Each Tool's own `status` as stored in the graph (what GET /v1/tools answered at 6260806)."""
    browser_url = os.environ.get("AIDEN_NEO4J_BROWSER_URL", "http://127.0.0.1:7474/browser/")
    http_url = urllib.parse.urljoin(browser_url, "/")
    db = os.environ.get("AIDEN_NEO4J_DATABASE", "neo4j")
    body = {"statements": [{"statement": "UNWIND $ids AS id MATCH (t:Tool {id: id}) "
                                         "RETURN t.id, t.status", "parameters": {"ids": ids}}]}
    req = urllib.request.Request(f"{http_url}db/{db}/tx/commit", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    who = f"{os.environ.get('AIDEN_NEO4J_USER', 'neo4j')}:{os.environ['AIDEN_NEO4J_PASSWORD']}"
    req.add_header("Authorization", "Basic " + base64.b64encode(who.encode()).decode())
    with urllib.request.urlopen(req) as res:
        answer = json.loads(res.read())
    assert not answer["errors"], answer["errors"]
    return {row["row"][0]: row["row"][1] for row in answer["results"][0]["data"]}


class Proxy(BaseHTTPRequestHandler):
    """Serves `server.assets` (if any) at `/` and `/ui/`, passes everything else to the API."""

    def log_message(self, *_):
        pass

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        assets = self.server.assets
        if assets is not None and (path == "/" or path.startswith("/ui/")):
            return self.asset(assets, "index.html" if path == "/" else path[len("/ui/"):])
        return self.forward(path)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def asset(self, assets, name):
        # As at 6260806: index.html at `/` only, every other file under `/ui/`.
        body = assets.get(name) if (name == "index.html") == (self.path == "/") else None
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        for k, v in [("Content-Type", MEDIA.get(os.path.splitext(name)[1], "text/plain")),
                     ("Content-Security-Policy", POLICY), ("X-Content-Type-Options", "nosniff"),
                     ("Cache-Control", "no-cache"), ("Content-Length", str(len(body)))]:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def forward(self, path):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        for method, pattern, seconds in list(SLOW):
            if method == self.command and re.fullmatch(pattern, path):
                time.sleep(seconds)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        rewrite = (self.server.assets is not None and self.command == "GET"
                   and re.fullmatch(r"/v1/tools(/[^/]+)?", path))
        if rewrite:
            headers.pop("Accept-Encoding", None)
            headers.pop("accept-encoding", None)
        up = http.client.HTTPConnection(SERVER.hostname, SERVER.port, timeout=600)
        up.request(self.command, self.path, body=body, headers=headers)
        res = up.getresponse()
        data = None
        if rewrite and res.status == 200:
            data = json.loads(res.read())
            tools = data["items"] if "items" in data else [data]
            stored = stored_tool_status([t["id"] for t in tools])
            for t in tools:
                t["status"] = stored.get(t["id"], t["status"])
            data = json.dumps(data).encode()
        self.send_response(res.status, res.reason)
        for k, v in res.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Connection", "close")
        if data is not None:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.close_connection = True
        if self.command == "HEAD":
            return
        if data is not None:
            self.wfile.write(data)
            return
        # Chunk by chunk as the server sends them: a run's events arrive as they happen.
        try:
            while chunk := res.read1(16384):
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page left (a stream aborted)
        finally:
            up.close()


def serve(port, assets):
    server = ThreadingHTTPServer(("127.0.0.1", port), Proxy)
    server.daemon_threads = True
    server.assets = assets
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --- Data through the API ------------------------------------------------------------------

def call(method, path, token, body=None):
    return tc.call(method, path, token, body)


def script(answer):
    """A message the scripted model answers with `answer` (tests/src/scripted_model.rs)."""
    return "script:" + json.dumps([{"answer": answer}])


def setup():
    """A shared scripted model (Service, ToolTemplate, Tool on the admin's key) and a shared
    agent on it; a user who has connected their own key, as Connect a model does."""
    service, template, model = f"ba-llm-{TAG}", f"ba-tpl-{TAG}", f"ba-model-{TAG}"
    call("POST", "/v1/services", ADMIN, {
        "id": service, "name": f"Scripted model {TAG}", "type": "llm_provider",
        "protocol": "http", "requiresSecret": False, "enabled": True, "shared": True,
        "endpoint": MODEL_URL,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"], "properties": {
            "endpoint": {"type": "string"}, "model": {"type": "string"}}}})
    call("POST", "/v1/tool-templates", ADMIN, {
        "id": template, "name": "Chat model", "shared": True,
        "operation": {"type": "llm_call", "api": "openai", "promptTemplate": "{{message}}"},
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "outputSchema": {"type": "object"}})
    call("POST", "/v1/secrets", ADMIN, {"id": f"ba-key-{TAG}", "name": "Admin key",
                                        "type": "api_key", "value": "sk-scripted-model-key"})
    call("POST", "/v1/tools", ADMIN, {
        "id": model, "name": "model", "serviceId": service, "toolTemplateId": template,
        "secretId": f"ba-key-{TAG}", "connectionParams": {"endpoint": MODEL_URL, "model": "scripted"},
        "enabled": True, "shared": True})
    agent = f"ba-agent-{TAG}"
    call("POST", "/v1/processes", ADMIN, {
        "id": agent, "name": "Travel agent", "initialContext": ["userMessage"], "shared": True,
        "steps": [{"id": "answer", "tool": model,
                   "agent": {"tools": [], "systemPrompt": "You plan trips."},
                   "inputs": {"message": "{{userMessage}}"}, "output": {"variable": "a"}}],
        "outputTemplate": "{{a.text}}"})
    # The Service probed now: healthy, which the after console's Tools page shows (item 7).
    call("POST", f"/v1/services/{service}/health-check", ADMIN)
    user = new_user("traveller")
    secret = call("POST", "/v1/secrets", user["token"], {
        "name": f"My key for Scripted model {TAG}", "type": "api_key",
        "value": "sk-scripted-model-key"})
    call("POST", "/v1/tools", user["token"], {
        "id": f"{model}-mine", "name": "model (mine)", "serviceId": service,
        "toolTemplateId": template, "secretId": secret["id"], "enabled": True, "shared": False,
        "connectionParams": {"endpoint": MODEL_URL, "model": "scripted"}})
    return user["token"], agent


def new_user(name):
    return call("POST", "/v1/users", ADMIN, {"name": f"{name}-{TAG}-{uuid.uuid4().hex[:4]}",
                                            "role": "user"})


def settled(token, conv, turns, timeout=90):
    """The conversation's tree once it has `turns` Turns and nothing is generating."""
    end = time.time() + timeout
    while time.time() < end:
        tree = call("GET", f"/v1/conversations/{conv}/tree", token)
        if len(tree["turns"]) >= turns and not any(
                a["cacheStatus"] == "generating" for t in tree["turns"] for a in t["alternatives"]):
            return tree
        time.sleep(0.3)
    raise AssertionError(f"conversation {conv} did not settle at {turns} turns")


def exchange(token, agent, conv, parent, answer, asked=None):
    """A message (a script answering `answer`) under `parent` and its answer; the answer Turn."""
    body = {"speaker": "user", "content": asked or script(answer)}
    if parent:
        body["parentTurnId"] = parent
    turn = call("POST", f"/v1/conversations/{conv}/turns", token, body)
    agent_turn = call("POST", f"/v1/conversations/{conv}/agent-turns", token,
                      {"processId": agent, "parentTurnId": turn["id"]})
    tree = settled(token, conv, 0)
    return next(t for t in tree["turns"] if t["id"] == agent_turn["turnId"])


def conversation(token, agent, title, answers=()):
    """A conversation answered by `agent`, with one exchange per answer in `answers`."""
    conv = call("POST", "/v1/conversations", token, {"title": title, "defaultProcessId": agent})
    parent = None
    for a in answers:
        parent = exchange(token, agent, conv["id"], parent, a)["id"]
    return conv["id"]


# --- The browser ---------------------------------------------------------------------------

class Shots:
    def __init__(self, before, after, token):
        self.d = tc.browser()
        self.base = {"before": before, "after": after}
        self.token = token

    def size(self, wh):
        """The viewport (and so the screenshot) exactly `wh`; a phone below 500 px."""
        w, h = wh
        self.d.set_window_size(w, h + 200)
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": w, "height": h, "deviceScaleFactor": 1, "mobile": w < 500})
        time.sleep(0.2)

    def open(self, side, hash_="", token=None):
        """The page at `hash_` in a fresh load of the `side` console, signed in with `token`."""
        d = self.d
        d.get("about:blank")
        d.get(self.base[side] + "/ui/style.css")  # the origin, to reach its sessionStorage
        if token is False:
            d.execute_script("sessionStorage.clear()")
        else:
            d.execute_script("sessionStorage.setItem('aiden.token', arguments[0])", token or self.token)
        d.get(f"{self.base[side]}/{hash_}")

    def wait(self, what, cond, timeout=30):
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.1).until(lambda _: cond())
        except Exception:
            raise AssertionError(f"timed out waiting for {what} at {self.d.current_url}:\n"
                                 + self.d.find_element(By.TAG_NAME, "body").text[:1500]) from None

    def css(self, selector):
        return self.d.find_elements(By.CSS_SELECTOR, selector)

    def one(self, selector):
        return self.wait(selector, lambda: (self.css(selector) or [None])[0])

    def save(self, name):
        """The window as docs/console/before-after/<name>.png, under MAX_BYTES."""
        os.makedirs(OUT, exist_ok=True)
        path = os.path.join(OUT, f"{name}.png")
        self.d.save_screenshot(path)
        img = Image.open(path).convert("RGB")
        img.save(path, optimize=True)
        if os.path.getsize(path) > MAX_BYTES:
            img.quantize(colors=256).save(path, optimize=True)
        assert tc.non_blank(path), f"{path} is blank"
        print(f"  {name}.png {img.width}x{img.height} {os.path.getsize(path) // 1024} KB", flush=True)

    def turns(self):
        return self.css("li.turn:not(.pending)")

    def settled_thread(self, n):
        """The thread shows `n` Turns, none generating."""
        self.wait(f"{n} settled turns", lambda: len(self.turns()) == n and all(
            t.get_attribute("data-status") != "generating" for t in self.turns()), timeout=60)

    def open_branch_map(self):
        for m in self.css("details.branch-map"):
            if m.get_attribute("open") is None:
                self.one("details.branch-map summary").click()
        time.sleep(0.2)


# --- The ten pairs -------------------------------------------------------------------------

LISBON = ("Friday: the Alfama and the castle at sunset. Saturday: Belem, the tower and the "
          "custard tarts. Sunday: a train to Sintra and back by evening.")
PORTO = "Porto is three hours north by train; two nights are enough for the river and the cellars."


def pair_01_send_feedback(s, token, agent):
    """A message sent while the server takes three seconds to take it."""
    s.size(DESKTOP)
    for side in ("before", "after"):
        conv = conversation(token, agent, "Weekend in Lisbon", [LISBON])
        s.open(side, f"#/c/{conv}")
        s.settled_thread(2)
        s.one("#message").send_keys(script(PORTO))
        SLOW[:] = [("POST", r"/v1/conversations/[^/]+/turns", 3.0)]
        s.one("#message").send_keys(Keys.ENTER)
        time.sleep(1.0)
        s.save(f"01-{side}")
        SLOW.clear()
        settled(token, conv, 4)


def pair_02_double_enter(s, token, agent):
    """Enter pressed twice at once; the thread and the opened branch map once it has settled."""
    s.size(DESKTOP)
    for side, turns in (("before", 6), ("after", 4)):
        conv = conversation(token, agent, "Double Enter", [LISBON])
        s.open(side, f"#/c/{conv}")
        s.settled_thread(2)
        s.one("#message").send_keys(script("Lisbon in May is warm, about 22 degrees."))
        SLOW[:] = [("POST", r"/v1/conversations/[^/]+/turns", 0.5)]
        # Two Enter key presses in a row on the message box, in one script (as fast as a key
        # bounce or a double press; WebDriver's own key actions come too far apart).
        s.d.execute_script("""
          const box = document.querySelector('#message');
          for (const i of [1, 2]) {
            box.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true, cancelable: true}));
          }""")
        settled(token, conv, 4)
        time.sleep(3.0)
        tree = settled(token, conv, 4)
        SLOW.clear()
        said = [(t["speaker"], t.get("parentTurnId"), t["alternatives"][0]["cacheStatus"])
                for t in tree["turns"]]
        assert len(tree["turns"]) == turns, f"{side}: {said}"
        s.open(side, f"#/c/{conv}")
        s.settled_thread(4)
        s.open_branch_map()
        s.save(f"02-{side}")


def pair_03_continue_from_here(s, token, agent):
    """One conversation for both: a message continued from the first answer, beside the one
    already there (what Continue from here makes)."""
    s.size(DESKTOP)
    conv = conversation(token, agent, "Continue from here", [LISBON])
    first = settled(token, conv, 2)["turns"]
    answer1 = next(t for t in first if t["speaker"] == "agent")["id"]
    exchange(token, agent, conv, answer1, PORTO)
    exchange(token, agent, conv, answer1, "Sintra is forty minutes by train from Rossio.",
             asked=script("Sintra is forty minutes by train from Rossio."))
    for side in ("before", "after"):
        s.open(side, f"#/c/{conv}")
        s.settled_thread(4)
        s.open_branch_map()
        s.d.execute_script("window.scrollTo(0, 0)")
        time.sleep(0.3)
        s.save(f"03-{side}")


def pair_04_follow_phone(s, token, agent):
    """On a phone, at the bottom of a conversation, a message sent; shot when its long answer
    has been written."""
    s.size(PHONE)
    long_answer = " ".join([
        "Here is a full plan for the week.", LISBON, PORTO,
        "Monday: the Douro valley by the slow train along the river, lunch in Pinhao.",
        "Tuesday: the Serralves gardens in the morning, the beach at Foz in the afternoon.",
        "Wednesday: back to Lisbon on the Alfa Pendular, a last dinner in Bairro Alto."])
    for side in ("before", "after"):
        conv = conversation(token, agent, "A week in Portugal", [LISBON, PORTO])
        s.open(side, f"#/c/{conv}")
        s.settled_thread(4)
        s.d.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
        box = s.one("#message")
        box.send_keys("script:" + json.dumps([{"answer": long_answer}]))
        box.send_keys(Keys.ENTER)
        settled(token, conv, 6)
        s.settled_thread(6)
        time.sleep(1.0)
        s.save(f"04-{side}")
    s.size(DESKTOP)


MARKDOWN = """Two ways to get there:

- the **train** from Santa Apolonia, 2 h 50 min
- the *bus* from Oriente, 3 h 30 min

To check the timetable:

```sh
curl -s https://example.com/cp/lisbon-porto
```

See [the CP site](https://example.com/cp)."""


def pair_05_markdown(s, token, agent):
    """One conversation for both: an answer written in Markdown."""
    s.size(DESKTOP)
    conv = conversation(token, agent, "Lisbon to Porto", [MARKDOWN])
    for side in ("before", "after"):
        s.open(side, f"#/c/{conv}")
        s.settled_thread(2)
        s.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", s.turns()[1])
        time.sleep(0.3)
        s.save(f"05-{side}")


def pair_06_sign_in(s):
    """A new tab, signed out."""
    s.size(DESKTOP)
    for side in ("before", "after"):
        s.open(side, "", token=False)
        s.one("#sign-in")
        time.sleep(0.3)
        s.save(f"06-{side}")


def pair_07_tool_health(s):
    """The Tools page, scrolled to this run's Tools (the Service was probed healthy)."""
    s.size(DESKTOP)
    for side in ("before", "after"):
        s.open(side, "#/tools")
        row = s.wait("this run's Tool", lambda: next(
            (r for r in s.css("tr") if f"ba-model-{TAG}" in r.text), None))
        s.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        time.sleep(0.3)
        s.save(f"07-{side}")


def pair_08_search_box(s, token, agent):
    """A search under way while the server takes four seconds to answer it."""
    s.size(DESKTOP)
    for side in ("before", "after"):
        s.open(side, "#/search")
        box = s.one("#search-q")
        box.send_keys("Sintra train Rossio")
        SLOW[:] = [("GET", r"/v1/search", 4.0)]
        box.send_keys(Keys.ENTER)
        time.sleep(1.0)
        s.save(f"08-{side}")
        time.sleep(3.5)
        SLOW.clear()


def pair_09_run_list(s):
    """The run list of the user, whose runs are the answers above."""
    s.size(DESKTOP)
    for side in ("before", "after"):
        s.open(side, "#/runs")
        s.wait("runs listed", lambda: len(s.css("table tr")) > 3)
        time.sleep(1.0)
        s.save(f"09-{side}")


def pair_10_key_tried(s):
    """Connect a model, a wrong key given, by a user not yet connected (one per console)."""
    s.size(DESKTOP)
    for side in ("before", "after"):
        user = new_user("newcomer")
        s.open(side, "#/connect", token=user["token"])
        card = f'li.connection[data-service-id="ba-llm-{TAG}"]'
        s.one(f"{card} input[type=password]").send_keys("sk-wrong-key")
        s.one(f"{card} form.connect button[type=submit]").click()
        if side == "before":
            s.wait("connected", lambda: s.one(card).get_attribute("data-connected") == "yes")
        else:
            s.wait("refused", lambda: "refused" in s.one(f"{card} p.status").text)
        s.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", s.one(card))
        time.sleep(0.3)
        s.save(f"10-{side}")


def pair_10b_message_bar(s, token, agent):
    """One conversation for both: the actions under an answer. Today's with its Regenerate ▾
    menu open."""
    s.size(DESKTOP)
    conv = conversation(token, agent, "The message bar", [LISBON])
    settled(token, conv, 2)
    for side in ("before", "after"):
        s.open(side, f"#/c/{conv}")
        s.settled_thread(2)
        if side == "after":
            s.one("li.turn.agent details.regen-menu summary").click()
        s.d.execute_script("window.scrollTo(0, 0)")
        time.sleep(0.3)
        s.save(f"10b-{side}")


def main():
    started = time.time()
    before_port = int(os.environ.get("AIDEN_BEFORE_PORT", "18286"))
    servers = [serve(before_port, old_assets()), serve(before_port + 1, None)]
    before, after = (f"http://127.0.0.1:{before_port}", f"http://127.0.0.1:{before_port + 1}")
    print(f"before-after: old console ({OLD}) at {before}, today's at {after}", flush=True)
    token, agent = setup()
    s = Shots(before, after, token)
    try:
        for name, pair in [("01", lambda: pair_01_send_feedback(s, token, agent)),
                           ("02", lambda: pair_02_double_enter(s, token, agent)),
                           ("03", lambda: pair_03_continue_from_here(s, token, agent)),
                           ("04", lambda: pair_04_follow_phone(s, token, agent)),
                           ("05", lambda: pair_05_markdown(s, token, agent)),
                           ("06", lambda: pair_06_sign_in(s)),
                           ("07", lambda: pair_07_tool_health(s)),
                           ("08", lambda: pair_08_search_box(s, token, agent)),
                           ("09", lambda: pair_09_run_list(s)),
                           ("10", lambda: pair_10_key_tried(s)),
                           ("10b", lambda: pair_10b_message_bar(s, token, agent))]:
            only = os.environ.get("AIDEN_PAIRS")
            if only and name not in only.split(","):
                continue
            print(f"pair {name}", flush=True)
            pair()
    finally:
        s.d.quit()
        for server in servers:
            server.shutdown()
    print(f"before-after: done in {time.time() - started:.0f} s; PNGs in {OUT}")


if __name__ == "__main__":
    main()
