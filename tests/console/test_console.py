"""The web console in a real headless Chromium, against a real `aiden serve`, an
llm_call worker pool and the scripted model (scripts/console-test.sh starts them).

Signs in (a wrong token first), creates a conversation, sends a message, watches an agent
answer stream in, edits the message and sees `< 2/2 >` and `stale`, switches back (by click and
by keyboard) and sees `stale` clear and return, regenerates, opens the run and sees its step
complete, forks, visits the catalog and the run list, and checks the phone layout. Then it
runs a three-step Process, forks the run from its last step in the run page (a refused fork
first), sees the fork's reused steps dimmed, compares the two runs, scrubs the fork's playback,
and regenerates an answer's last step only. An answer written in Markdown shows as a list, a
code block with Copy and a link, and markup in it that would run script does not. Every screen is saved as a PNG in
$AIDEN_SCREENSHOTS and checked to be non-blank.
"""

import contextlib
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

from PIL import Image
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

import timings
import users_spend

BASE = os.environ["AIDEN_SERVER"]
MODEL_URL = os.environ["AIDEN_MODEL_URL"]
SHOTS = os.environ["AIDEN_SCREENSHOTS"]
# The screens a reviewer looks at first: sign-in, the Users page, a chat.
SHOTS2 = os.environ.get("AIDEN_SCREENSHOTS_EXTRA", "/tmp/console-shots2")
# An agent's answer rendered as Markdown.
SHOTS3 = os.environ.get("AIDEN_SCREENSHOTS_MARKDOWN", "/tmp/console-shots3")
TAG = uuid.uuid4().hex[:8]
# The console user's daily budget (AGT-14): the Users page shows their spend against it.
BUDGET_USD = 25.0
# Each main action, timed from the click to the result on screen (timings.py).
TIMINGS = timings.Timings()


def call(method, path, token, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req) as res:
            return json.loads(res.read() or b"null")
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{method} {path}: {e.code} {e.read().decode()}") from None


def setup():
    """The admin's shared model: a Service, a ToolTemplate, a Tool of it on the admin's own key,
    and a shared agent Process on that Tool. A fresh user, who must connect their own key."""
    admin = os.environ["AIDEN_ADMIN_TOKEN"]
    user = call("POST", "/v1/users", admin, {"name": f"console-{TAG}", "role": "user"})
    call("PATCH", f"/v1/users/{user['id']}", admin, {"quota": {"maxCostUsdPerDay": BUDGET_USD}})
    call("POST", "/v1/services", admin, {
        "id": f"console-llm-{TAG}", "name": f"Scripted model {TAG}", "type": "llm_provider",
        "protocol": "http", "requiresSecret": False, "enabled": True, "shared": True,
        "endpoint": MODEL_URL,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"], "properties": {
            "endpoint": {"type": "string"}, "model": {"type": "string"}}}})
    call("POST", "/v1/tool-templates", admin, {
        "id": f"console-tpl-{TAG}", "name": "Chat model", "shared": True,
        "operation": {"type": "llm_call", "api": "openai", "promptTemplate": "{{message}}"},
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "outputSchema": {"type": "object"}})
    call("POST", "/v1/secrets", admin, {"id": f"console-key-{TAG}", "name": "Admin key",
                                        "type": "api_key", "value": f"sk-admin-{TAG}"})
    model = f"console-model-{TAG}"
    call("POST", "/v1/tools", admin, {
        "id": model, "name": "model", "serviceId": f"console-llm-{TAG}",
        "toolTemplateId": f"console-tpl-{TAG}", "secretId": f"console-key-{TAG}",
        "connectionParams": {"endpoint": MODEL_URL, "model": "scripted"},
        "enabled": True, "shared": True})
    agent = f"console-agent-{TAG}"
    call("POST", "/v1/processes", admin, {
        "id": agent, "name": f"Console agent {TAG}", "initialContext": ["userMessage"],
        "shared": True,
        "steps": [{"id": "answer", "tool": model,
                   "agent": {"tools": [], "systemPrompt": "You are the console's test agent."},
                   "inputs": {"message": "{{userMessage}}"}, "output": {"variable": "a"}}],
        "outputTemplate": "{{a.text}}"})
    # A Process to draw: a plan, two parallel searches after it, and the agent as a child.
    call("POST", "/v1/processes", admin, {
        "id": f"console-flow-{TAG}", "name": "Plan, search, answer", "initialContext": ["q"],
        "shared": True,
        "steps": [
            {"id": "plan", "tool": model, "inputs": {"message": "{{q}}"},
             "output": {"variable": "plan"}},
            {"id": "search-web", "tool": model, "dependsOn": ["plan"],
             "execution": {"mode": "parallel"}, "inputs": {"message": "{{plan.text}}"}},
            {"id": "search-notes", "tool": model, "dependsOn": ["plan"],
             "execution": {"mode": "parallel"}, "inputs": {"message": "{{plan.text}}"}},
            {"id": "answer", "process": agent, "inputs": {"userMessage": "{{q}}"}}]})
    # Three steps in a row, to fork from the last: only `reply` reads `tone`, so a fork with
    # another tone reuses the first two steps' results and writes the reply again.
    call("POST", "/v1/processes", admin, {
        "id": f"console-steps-{TAG}", "name": "Find, summarize, reply", "shared": True,
        "initialContext": ["q", "tone"],
        "steps": [
            {"id": "find", "tool": model, "inputs": {"message": "{{q}}"},
             "output": {"variable": "found"}},
            {"id": "summarize", "tool": model,
             "inputs": {"message": 'script:[{"answer": "three hotels, two by the sea"}]'},
             "output": {"variable": "summary"}},
            {"id": "reply", "tool": model,
             "inputs": {"message": 'script:[{"answer": "A {{tone}} reply"}]'}}]})
    # An agent with an intent router allowed one model turn: its script routes the message, then
    # asks for a tool, so the loop stops at its turn limit (AGT-7) instead of answering.
    call("POST", "/v1/processes", admin, {
        "id": f"console-limited-{TAG}", "name": f"Limited agent {TAG}", "shared": True,
        "initialContext": ["userMessage"],
        "steps": [{"id": "answer", "tool": model, "inputs": {"message": "{{userMessage}}"},
                   "output": {"variable": "a"},
                   "agent": {"tools": [], "maxIterations": 1, "systemPrompt": "Be brief.",
                             "router": {"intents": [{"name": "chat"}, {"name": "lookup"}]}}}],
        "outputTemplate": "{{a.text}}"})
    return user["token"], agent, user["id"]


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                f"--user-data-dir={tempfile.mkdtemp(prefix='aiden-console-')}",
                "--window-size=1280,800"]:
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


class Console:
    def __init__(self, driver):
        self.d = driver
        self.shots = []

    def wait(self, what, cond, timeout=30):
        def attempt(_):
            try:
                return cond()
            except StaleElementReferenceException:
                return False
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.05).until(attempt)
        except Exception:
            self.shot(f"failed-{len(self.shots):02d}")
            raise AssertionError(f"timed out waiting for {what}; page: {self.d.current_url}\n"
                                 f"{self.d.find_element(By.TAG_NAME, 'body').text[:2000]}")

    def css(self, selector, root=None):
        return (root or self.d).find_elements(By.CSS_SELECTOR, selector)

    def one(self, selector, root=None):
        return self.wait(selector, lambda: (self.css(selector, root) or [None])[0])

    def turns(self):
        return self.css("li.turn")

    def click(self, selector):
        """Clicks the first `selector`, finding it again if the page re-rendered between the find
        and the click (a stale element is never clicked, so no click is doubled)."""
        def attempt():
            found = self.css(selector)
            if not found:
                return False
            found[0].click()
            return True
        return self.wait(f"a click on {selector}", attempt)

    def attr(self, selector, name):
        """An attribute of the first `selector`, read again if the page re-rendered meanwhile."""
        def read():
            found = self.css(selector)
            return found and (found[0].get_attribute(name),)
        return self.wait(f"{selector}'s {name}", read)[0]

    def click_in_turn(self, selector, i):
        """Clicks `selector` in turn `i`, finding both again if the thread re-rendered between
        the find and the click (a stale element is never clicked, so no click is doubled)."""
        def attempt():
            found = self.css(selector, self.turn(i))
            if not found:
                return False
            found[0].click()
            return True
        return self.wait(f"{selector} in turn {i}", attempt)

    def turn(self, i):
        return self.wait(f"turn {i}", lambda: len(self.turns()) > i and self.turns()[i])

    def status(self, i):
        return self.turn(i).get_attribute("data-status")

    def content(self, i):
        found = self.css(".content", self.turn(i))
        return found[0].text if found else None

    def count(self, i):
        found = self.css(".count", self.turn(i))
        return found[0].text if found else None

    def shot(self, name):
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, f"{name}.png")
        self.d.save_screenshot(path)
        self.shots.append(path)
        return path

    def go(self, hash_):
        self.d.get(f"{BASE}/{hash_}")

    def extra(self, name):
        """A screen also saved under SHOTS2 by its plain name."""
        os.makedirs(SHOTS2, exist_ok=True)
        path = os.path.join(SHOTS2, f"{name}.png")
        self.d.save_screenshot(path)
        self.shots.append(path)
        return path


@contextlib.contextmanager
def phone_width(d):
    """A 390-px-wide phone for the body, the desktop width again after it (passed or not)."""
    d.set_window_size(390, 844)
    try:
        time.sleep(0.3)
        yield
    finally:
        d.set_window_size(1280, 800)


def assert_fits_phone(d, what=""):
    """No sideways scrolling: the page is no wider than the window (1 px of rounding)."""
    wide = d.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1] + 1, f"{what}wider than the phone: {wide}"


def non_blank(path):
    """More than a handful of colours, and not one colour over nearly all of it."""
    img = Image.open(path).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 20) or []
    biggest = max(n for n, _ in colours) if colours else 0
    total = img.width * img.height
    return len(colours) > 8 and biggest < total * 0.995


def main():
    os.makedirs(SHOTS, exist_ok=True)
    for old in os.listdir(SHOTS):
        if old.endswith(".png"):
            os.remove(os.path.join(SHOTS, old))
    token, agent, user_id = setup()
    d = browser()
    c = Console(d)
    try:
        run(c, token, agent)
        neo4j_links(c)
        accounts(c)
        users_page(c, user_id)
    finally:
        d.quit()
    blank = [p for p in c.shots if not non_blank(p)]
    assert not blank, f"blank screenshots: {blank}"
    print(f"console: {len(c.shots)} screens checked, none blank ({SHOTS})")
    print("console: each action, from the click to the result on screen (ms):")
    print(TIMINGS.table())
    TIMINGS.check(timings.BOUND_MS, timings.UNBOUNDED)


def signed_in_admin(c):
    """A browser of its own, signed in as the bootstrap admin (its token)."""
    admin = Console(browser())
    admin.shots = c.shots
    admin.go("")
    admin.click("#use-token")
    admin.one("#token").send_keys(os.environ["AIDEN_ADMIN_TOKEN"])
    admin.click("#sign-in button[type=submit]")
    admin.one("#conversation-list")
    return admin


def users_page(c, user_id):
    """The admin sees the console user's spend and runs on the Users page; its actions, timed."""
    admin_token = os.environ["AIDEN_ADMIN_TOKEN"]
    admin = signed_in_admin(c)
    try:
        users_spend.check(admin, call, admin_token, user_id, BUDGET_USD, shot_as, phone_width,
                          assert_fits_phone)
        timed = call("POST", "/v1/users", admin_token, {"name": f"timed-{TAG}", "role": "user"})
        timings.users_page(TIMINGS, admin, timed["id"])
    finally:
        admin.d.quit()


def run(c, token, agent):
    d = c.d
    # Sign-in: a name and a password first; a token is the other way in (programs, the
    # bootstrap admin). A wrong token is refused with a clear message; it never enters the URL.
    c.go("")
    c.one("#sign-in #name")
    c.one("#sign-in #password")
    c.extra("sign-in")
    c.click("#use-token")
    c.one("#token").send_keys("not-a-token")
    c.click("#sign-in button[type=submit]")
    err = c.one("#sign-in-error")
    assert "not accepted" in err.text, err.text
    c.shot("01-sign-in-refused")
    c.one("#token").send_keys(token)
    c.click("#sign-in button[type=submit]")
    c.one("#conversation-list")
    assert token not in d.current_url
    assert d.execute_script("return sessionStorage.getItem('aiden.token')") == token
    # The admin's agent runs on the admin's key: not this user's until they connect their own.
    c.go("#/connect")
    card = c.one(f'li.connection[data-service-id="console-llm-{TAG}"]')
    assert card.get_attribute("data-connected") == "no"
    assert f"Console agent {TAG}" in c.one("main").text, "listed as waiting for a connection"
    c.shot("02b-connect")
    # SEC-7: a wrong key is tried with the provider first, refused in words, and not kept.
    wrong = f"sk-wrong-{TAG}"
    c.one("input[type=password]", card).send_keys(wrong)
    c.one("form.connect button[type=submit]", card).click()
    said = c.wait("the key refused", lambda: next(
        (x.text for x in c.css("li.connection p.status.error") if "refused the key" in x.text), None))
    assert "401" in said and wrong not in said, said
    assert wrong not in c.one("main").text, "the key is never shown back"
    card = c.one(f'li.connection[data-service-id="console-llm-{TAG}"]')
    assert card.get_attribute("data-connected") == "no"
    assert not [s_ for s_ in call("GET", "/v1/secrets", token)["items"]
                if s_["name"].startswith("My key for")], "nothing saved"
    c.shot("02d-connect-key-refused")
    shot_as(c, "connect-key-refused")
    with phone_width(d):
        assert_fits_phone(d)
        assert c.one("li.connection p.status.error").is_displayed()
        shot_as(c, "connect-key-refused-phone")
    box = c.one("input[type=password]", card)
    box.clear()
    box.send_keys("sk-scripted-model-key")
    c.one("form.connect button[type=submit]", card).click()
    c.wait("connected", lambda: c.one(f'li.connection[data-service-id="console-llm-{TAG}"]')
           .get_attribute("data-connected") == "yes")
    assert f"Console agent {TAG}" not in c.one("main").text
    c.shot("02c-connected")

    c.go("")
    c.one("#new-title").send_keys("Trip planning")
    c.click("form.inline button[type=submit]")
    c.wait("the new conversation", lambda: "#/c/" in d.current_url)
    conversation = d.current_url.split("#/c/")[1]
    c.wait("its title", lambda: "Trip planning" in c.one("h1").text)
    # The tab names the conversation, and the composer is ready to type in.
    c.wait("the tab's title", lambda: d.title == "Trip planning · Aiden")
    c.wait("the composer focused", lambda: d.execute_script("return document.activeElement.id") == "message")

    # Enter sends the message and starts its answer: `generating` turns into the streamed text.
    # The message shows at once ("sending…") and the composer waits, so a double Enter sends once.
    first = "Alpha plan: fly to Lisbon on Friday, stay three nights, then take the train to Porto"
    Select(c.one('select[aria-label="Process to answer with"]')).select_by_value(agent)
    d.execute_script("""
      window.__seen = {pending: false, disabled: false};
      new MutationObserver(() => {
        const p = document.querySelector('li.turn.pending');
        if (p && p.textContent.includes('sending…') && p.textContent.includes('Alpha plan')) window.__seen.pending = true;
        const m = document.querySelector('#message');
        if (m && m.disabled) window.__seen.disabled = true;
      }).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});""")
    c.one("#message").send_keys(f'script:[{{"answer": "{first}"}}]')
    ActionChains(d).send_keys(Keys.ENTER).send_keys(Keys.ENTER).perform()
    c.wait("a generating answer", lambda: len(c.turns()) == 2 and c.status(1) == "generating")
    seen = d.execute_script("return window.__seen")
    assert seen == {"pending": True, "disabled": True}, seen
    assert "generating" in c.turn(1).text
    partial = c.wait("streamed words", lambda: (c.content(1) or "").strip("…").strip()
                     if c.status(1) == "generating" else None, timeout=20)
    assert first.startswith(partial) and len(partial) < len(first), partial
    c.shot("03-generating")
    c.wait("the answer", lambda: c.status(1) == "valid" and c.content(1) == first)
    assert "generating" not in c.turn(1).text
    c.shot("04-answered")
    c.extra("chat")
    tree = call("GET", f"/v1/conversations/{conversation}/tree", token)
    assert len(tree["turns"]) == 2, f"a double Enter sent once: {len(tree['turns'])} turns"
    c.wait("the composer focused again", lambda: d.execute_script("return document.activeElement.id") == "message")

    # Esc leaves an edit as it was.
    c.click_in_turn("button.edit-btn", 0)
    c.wait("the editor focused", lambda: d.execute_script(
        "return document.activeElement.getAttribute('aria-label')") == "Edited message")
    d.switch_to.active_element.send_keys(Keys.ESCAPE)
    c.wait("the edit canceled", lambda: not c.css("form.edit") and c.content(0).startswith("script:"))

    # Edit the message: saving it answers the new version, so both read < 2/2 >.
    second = "Beta plan: take the night train to Madrid instead"
    c.click_in_turn("button.edit-btn", 0)
    editor = c.one('textarea[aria-label="Edited message"]')
    editor.clear()
    editor.send_keys(f'script:[{{"answer": "{second}"}}]')
    c.click("form.edit button[type=submit]")
    c.wait("< 2/2 > on both, re-answered", lambda: c.count(0) == "2/2" and c.count(1) == "2/2"
           and c.status(1) == "valid" and c.content(1) == second, timeout=40)
    assert len(c.turns()) == 2, "no second answer Turn under a stale one"
    c.shot("05-edited-reanswered")

    # Switch the message back by click: its answer follows; forward by keyboard: it returns.
    c.click_in_turn("button.prev", 0)
    c.wait("< 1/2 > on both", lambda: c.count(0) == "1/2" and c.count(1) == "1/2"
           and c.status(1) == "valid" and c.content(1) == first)
    c.shot("06-switched-back")
    c.turn(0).send_keys(Keys.ARROW_RIGHT)
    c.wait("< 2/2 > by keyboard", lambda: c.count(0) == "2/2" and c.count(1) == "2/2"
           and c.content(1) == second)

    # Regenerate the answer for the edited message: a third version of the answer.
    c.click_in_turn("button.regenerate", 1)
    c.wait("the regenerated answer", lambda: c.count(1) == "3/3" and c.status(1) == "valid"
           and c.content(1) == second, timeout=40)
    c.shot("07-regenerated")

    # The branch map: choosing the first answer makes it and the message it answers active.
    c.click("details.branch-map summary")
    agent_versions = c.css("li.map-turn li.map-turn button.map-alt")
    # v1 answered the first message, which is no longer the active one.
    assert [b.text for b in agent_versions] == ["v1 stale", "v2", "v3 (active)"], \
        [b.text for b in agent_versions]
    agent_versions[0].click()
    c.wait("the first branch", lambda: c.count(0) == "1/2" and c.count(1) == "1/3"
           and c.status(1) == "valid" and c.content(1) == first)
    c.shot("07b-branch-map")
    assert c.attr("details.branch-map", "open") is not None, "stays open"
    agent_versions = c.css("li.map-turn li.map-turn button.map-alt")
    agent_versions[2].click()
    c.wait("back on the second branch", lambda: c.count(0) == "2/2" and c.count(1) == "3/3"
           and c.content(1) == second)

    # Its run: the DAG's step fills in, and the step's details open.
    c.click_in_turn("a.run-link", 1)
    c.wait("the run page", lambda: "#/runs/" in d.current_url)
    c.wait("the step completed", lambda: "s-completed" in (c.one('svg.dag g.node[data-step="answer"]')
                                                         .get_attribute("class") or ""))
    c.click('svg.dag g.node[data-step="answer"]')
    detail = c.one("section.step-detail")
    assert "Step answer" in detail.text and "completed" in detail.text, detail.text
    # The timeline: the agent step's model turn as its own node, with its duration and input.
    turn_node = c.one('section.timeline li.call[data-step="answer#m1"]')
    assert "Model turn 1" in turn_node.text and " ms" in turn_node.text, turn_node.text
    assert turn_node.get_attribute("data-status") == "completed"
    # The message it answered, as a link to that exact Alternative in its conversation.
    asked = c.one("p.asked")
    assert "Answered" in asked.text and "Beta plan" in asked.text, asked.text
    assert "?alt=" in c.one("a.message-link", asked).get_attribute("href")
    c.shot("08-run")
    run_id = d.current_url.split("#/runs/")[1]
    # The lineage: the run's Tool, its Service, the Worker; followed to the Service.
    c.one("section.lineage li.lineage-row")
    rows = c.css("section.lineage li.lineage-row")
    assert len(rows) == 1, [r.text for r in rows]
    row = rows[0]
    # The user's own Tool ran (their connection), on its Service, by an llm_call worker.
    assert "model (mine)" in row.text and "llm_call" in row.text, row.text
    c.shot("08b-lineage")
    c.one("a.service-link", row).click()
    c.wait("the services page", lambda: f"console-llm-{TAG}" in c.one("main").text)
    d.back()
    c.wait("the run page again", lambda: "#/runs/" in d.current_url)

    # Fork from the answer: a new conversation with a copy of the path.
    d.back()
    c.wait("the conversation again", lambda: len(c.turns()) == 2 and c.content(1) == second)
    c.click_in_turn("button.fork", 1)
    c.wait("the fork", lambda: "#/c/" in d.current_url and conversation not in d.current_url)
    c.wait("the fork's copy", lambda: len(c.turns()) == 2 and c.content(1) == second)
    assert "Forked from" in c.one("main").text
    c.shot("09-fork")

    # The run list, the catalog and the workers.
    c.go("#/runs")
    c.one(f'tr[data-run-id="{run_id}"]')
    c.shot("10-runs")
    c.go(f"#/processes/console-flow-{TAG}")
    c.wait("the drawn steps", lambda: len(c.css("svg.dag g.node")) == 4)
    assert len(c.css("svg.dag path.edge")) == 4, "plan → two searches → answer"
    c.shot("11-process")
    for n, name, expect in [(12, "tools", f"console-model-{TAG}"),
                            (13, "services", f"console-llm-{TAG}"), (14, "workers", "llm_call")]:
        c.go(f"#/{name}")
        c.one("main h1")
        # The Tools come 50 at a time: "More tools" until the test's Tool is on the page.
        while name == "tools" and expect not in c.one("main").text and c.one("#tools-more").is_displayed():
            shown = len(c.css("main tbody tr"))
            c.click("#tools-more")
            c.wait("the next tools", lambda: len(c.css("main tbody tr")) > shown)
        c.wait(f"the {name} page", lambda: expect in c.one("main").text)
        c.shot(f"{n}-{name}")

    # An unknown link: a not-found page, not a banner over "Loading…".
    c.go("#/c/no-such-conversation")
    c.wait("not found", lambda: c.one("h1").text == "Not found")
    assert "Loading" not in c.one("main").text
    c.shot("16-not-found")

    # Search: the nav's Search finds the answer by its words (no embedder runs beside
    # this server, so the page says meaning is unavailable) and links to its conversation.
    c.go("#/search")
    c.one("#search-q").send_keys("Lisbon Porto train", Keys.ENTER)
    hit = c.wait("a search hit", lambda: next((x for x in c.css("#hits li.hit") if "Lisbon" in x.text), None))
    assert c.one("span.origin a", hit).get_attribute("href").endswith(
        f"#/c/{conversation}?alt={hit.get_attribute('data-id')}"), "the hit opens the message itself"
    assert "meaning is not available" in c.one("main").text
    c.shot("18-search")
    # An Entity's page: its summary, and empty mentions and facts said in words.
    entity = call("POST", "/v1/entities", token,
                  {"name": f"Porto {TAG}", "summary": "A city in the north of Portugal"})
    c.go(f"#/entities/{entity['uuid']}")
    c.wait("the entity page", lambda: c.css("#entity-name") and f"Porto {TAG}" in c.one("#entity-name").text)
    assert "north of Portugal" in c.one("#entity-summary").text
    c.shot("19-entity")

    # Memories (SRCH-4): remember one on the Memories page, find it by search, forget it.
    c.go("#/memories")
    c.wait("the memories page", lambda: c.css("#remember"))
    c.one("#memory-new").send_keys(f"My bicycle {TAG} is a green Brompton")
    c.click("#remember button[type=submit]")
    mem = c.wait("the new memory", lambda: next(
        (x for x in c.css("#memories li.memory") if "Brompton" in x.text), None))
    assert "Forget" in mem.text, mem.text
    c.shot("20-memories")
    c.go(f"#/search?q=Brompton+{TAG}&kind=memory")
    c.wait("the memory found", lambda: any("Brompton" in x.text
                                          and x.get_attribute("data-kind") == "memory"
                                          for x in c.css("#hits li.hit")))
    c.go("#/memories")
    mem = c.wait("the memory listed", lambda: next(
        (x for x in c.css("#memories li.memory") if "Brompton" in x.text), None))
    c.one("button.forget", mem).click()
    c.wait("the memory forgotten", lambda: not any("Brompton" in x.text
                                                   for x in c.css("#memories li.memory")))

    # A failed answer says so in a sentence, with details behind a toggle, and Retry answers.
    c.go(f"#/c/{conversation}")
    c.wait("the conversation", lambda: len(c.turns()) == 2)
    Select(c.one('select[aria-label="Process to answer with"]')).select_by_value(agent)
    c.one("#message").send_keys('script:[{"failOnce": "scripted refusal", "answer": "third"}]',
                                Keys.ENTER)
    c.wait("the failed answer", lambda: len(c.turns()) == 4 and c.status(3) == "failed", timeout=40)
    failed = c.turn(3)
    assert "The model could not give an answer" in failed.text, failed.text
    assert "scripted refusal" in c.one("details.error-details code", failed).get_attribute("textContent")
    assert not c.one("details.error-details", failed).get_attribute("open")
    c.shot("17-failed")
    c.one("button.retry", failed).click()
    c.wait("the retried answer", lambda: c.status(3) == "valid" and c.content(3) == "third"
           and c.count(3) == "2/2", timeout=40)

    # A 390-px-wide phone: no sideways scrolling, a compact menu, the composer at the bottom.
    c.go(f"#/c/{conversation}")
    c.wait("the conversation", lambda: len(c.turns()) == 4)
    with phone_width(d):
        assert_fits_phone(d)
        runs_link = c.css('nav#nav a[href="#/runs"]')[0]
        assert not runs_link.is_displayed(), "the menu is folded"
        assert c.one("form.composer").value_of_css_property("position") == "sticky"
        c.shot("15-phone")
        c.click("button.menu-toggle")
        c.wait("the menu open", lambda: runs_link.is_displayed())
        c.shot("15b-phone-menu")
    c.go("")
    c.one("#conversation-list")
    c.shot("02-conversations")

    fork_compare_and_play(c, token)
    runs_like_temporal(c, token, run_id, conversation)
    regenerate_answer_only(c, conversation)
    continue_from_here(c, conversation)
    double_submit(c, token, agent)
    markdown_answer(c, token, agent)
    search_people_trust(c, token)

    # The main actions, each timed (the model's own time left out).
    timings.navigation(TIMINGS, c)
    timings.chat(TIMINGS, c, call, token, agent, TAG)
    timings.run_list(TIMINGS, c)
    timings.search(TIMINGS, c, "Lisbon Porto train")

    # A token that stops working sends the user back to sign-in with a message.
    d.execute_script("sessionStorage.setItem('aiden.token', 'revoked')")
    d.refresh()
    assert "no longer accepted" in c.one("#sign-in-error").text


def search_people_trust(c, token):
    """Search (issue #51, item 8): a weak match is not listed (SRCH-6), each hit says what
    found it and that it is not yet indexed (nothing is embedded beside this server), the box
    keeps its text and focus while a slow search runs, and a hit opens the message itself; at
    desktop and phone sizes."""
    d = c.d
    words = [f"w{i}x{uuid.uuid4().hex[:10]}" for i in range(6)]
    strong = call("POST", "/v1/conversations", token, {"title": f"Kayak trip {TAG}"})
    strong_turn = call("POST", f"/v1/conversations/{strong['id']}/turns", token,
                       {"speaker": "user", "content": " ".join(words) + " kayak by the river mouth"})
    strong_alt = strong_turn["alternatives"][0]["id"]
    weak = call("POST", "/v1/conversations", token, {"title": f"Groceries {TAG}"})
    weak_alt = call("POST", f"/v1/conversations/{weak['id']}/turns", token,
                    {"speaker": "user", "content": words[0] + " bought bread at the market today"}
                    )["alternatives"][0]["id"]
    c.go("#/search")
    box = c.one("#search-q")
    d.execute_script("document.querySelector('#search-q').dataset.kept = 'yes'")
    query = " ".join(words)
    box.send_keys(query)
    # Submitted, and read back in the same script, before the API can have answered: the
    # search is under way ("Searching…") and the box is the same element, with its text and
    # the focus.
    searching, focused, value, kept = d.execute_script("""
      document.querySelector('#search').requestSubmit();
      const box = document.querySelector('#search-q');
      return [!!document.querySelector('#searching'), document.activeElement.id, box.value,
              box.dataset.kept];""")
    assert searching, "a search under way says so"
    assert kept == "yes", "the box was rebuilt while searching"
    assert value == query, value
    assert focused == "search-q", f"focus moved to {focused!r}"
    assert "#/search?q=" in d.current_url, d.current_url
    hit = c.wait("the strong hit", lambda: next(
        (x for x in c.css("#hits li.hit") if x.get_attribute("data-id") == strong_alt), None))
    ids = [x.get_attribute("data-id") for x in c.css("#hits li.hit")]
    assert weak_alt not in ids, f"a one-word-of-six match is under the floor: {ids}"
    assert ids == [strong_alt], ids
    assert [x.get_attribute("data-by") for x in c.css("span.found", hit)] == ["words"]
    assert "by words" in hit.text and "not yet indexed" in hit.text, hit.text
    assert c.css("#not-indexed-note"), "the page says what not yet indexed means"
    assert c.attr("#search-q", "data-kept") == "yes", "the box stayed after results"
    c.shot("30-search-found-by")
    shot_as(c, "search-found-by")
    with phone_width(d):
        assert_fits_phone(d)
        assert c.one("#search-q").is_displayed()
        assert "not yet indexed" in c.one("#hits li.hit").text
        c.shot("31-search-found-by-phone")
        shot_as(c, "search-found-by-phone")
        # The hit opens the message itself: its conversation, scrolled to and focused on it.
        link = c.one("span.origin a", c.one("#hits li.hit"))
        assert link.get_attribute("href").endswith(f"#/c/{strong['id']}?alt={strong_alt}")
        link.click()
        c.wait("the message focused", lambda: d.execute_script(
            "return document.activeElement && document.activeElement.closest('[data-alt-id]')"
            "?.dataset.altId") == strong_alt)
        c.shot("32-search-opens-message-phone")


def runs_like_temporal(c, token, answered_run, conversation):
    """The run list as in Temporal's UI (status, Process and owner by name, the message, start,
    duration; filters, search by id, live refresh) and a run's waterfall, its intent router
    named, its limit flagged, and the link to the exact message it answered; at desktop and
    phone sizes."""
    d = c.d
    script = json.dumps([{"route": {"intent": "chat", "confidence": 0.9}},
                         {"calls": [{"name": "lookup", "args": {}}]}])
    limited = call("POST", f"/v1/processes/console-limited-{TAG}/runs", token,
                   {"inputs": {"userMessage": f"script:{script}"}})["runId"]
    run = settled_run(token, limited)
    answer = next(s for s in run["steps"] if s["stepId"] == "answer")
    assert answer["output"]["finishReason"] == "iteration_limit", answer

    # The run page: a waterfall row per step and per call, the router named, the limit flagged.
    c.go(f"#/runs/{limited}")
    wf = c.one("section.waterfall")
    rows = c.wait("the waterfall's rows", lambda: [r.get_attribute("data-row") for r in c.css("li.wf-row")]
                  if len(c.css("li.wf-row")) >= 3 else None)
    # Calls are numbered across kinds: the router's is #r1, the model turn after it #m2.
    model_turn = next((r for r in rows if r.startswith("answer#m")), None)
    assert rows[0] == "answer" and "answer#r1" in rows and model_turn, rows
    router = c.one('li.wf-row[data-row="answer#r1"]')
    assert "Intent router" in router.text and "Model turn" not in router.text, router.text
    assert "Model turn 1" in c.one(f'li.wf-row[data-row="{model_turn}"]').text
    assert "Intent router" in c.one('section.timeline li.call[data-step="answer#r1"]').text
    top = c.one('li.wf-row[data-row="answer"]')
    assert "hit-limit" in top.get_attribute("class"), top.get_attribute("class")
    assert "model-turn limit" in c.one("span.limit-flag").text
    assert "hit-limit" in c.attr('svg.dag g.node[data-step="answer"]', "class")
    assert len(c.css(".wf-axis .wf-tick", wf)) == 5
    # Every bar that ran is drawn, and the model turn ran after the router turn.
    run_bar = c.one(f'li.wf-row[data-row="{model_turn}"] .wf-run')
    router_bar = c.one('li.wf-row[data-row="answer#r1"] .wf-run')
    assert run_bar.location["x"] >= router_bar.location["x"], (run_bar.location, router_bar.location)
    queued = [r for r in c.css("li.wf-row") if c.css(".wf-queue", r)]
    assert queued, "some queue wait is drawn apart from the run"
    # A call's details: its queue wait and its run, in words (the agent step itself is the
    # loop, never queued, so its row has no wait to show).
    c.one("button.wf-pick", queued[0]).click()
    detail = c.one("div.wf-detail")
    assert "Queued" in detail.text and "waited" in detail.text and "ran" in detail.text, detail.text
    assert not c.css("a.neo4j-link"), "a user is not offered Neo4j Browser"
    c.shot("25-run-waterfall")
    shot_as(c, "run-waterfall")

    # The list: names, the answered message, a duration; filters; search; live refresh.
    c.go("#/runs")
    row = c.one(f'tr[data-run-id="{limited}"]')
    assert f"Limited agent {TAG}" in row.text and f"console-{TAG}" in row.text, row.text
    duration = c.one("td.run-duration", row).text
    assert duration.endswith(" ms") or duration.endswith(" s"), duration
    answered = c.one(f'tr[data-run-id="{answered_run}"]')
    message = c.one("a.run-message", answered)
    assert "Beta plan" in message.text, message.text
    assert f"#/c/{conversation}?alt=" in message.get_attribute("href")
    c.shot("26-runs-list")
    shot_as(c, "runs-list")
    Select(c.one("#run-process")).select_by_value(f"console-limited-{TAG}")
    c.wait("only the limited agent's runs", lambda: "process=console-limited" in d.current_url
           and c.css(f'tr[data-run-id="{limited}"]')
           and all(f"Limited agent {TAG}" in r.text for r in c.css("table.runs tbody tr")))
    Select(c.one("#run-status")).select_by_value("failed")
    c.wait("no failed run of it", lambda: "No run matches" in c.one("table.runs tbody").text)
    Select(c.one("#run-status")).select_by_value("")
    c.one(f'tr[data-run-id="{limited}"]')
    assert Select(c.one("#run-process")).first_selected_option.get_attribute("value") == f"console-limited-{TAG}"
    # Live: a run started elsewhere appears while the page stays as it is (filter kept).
    marker = d.execute_script("document.querySelector('#run-search').dataset.kept = 'yes'; return 1")
    newer = call("POST", f"/v1/processes/console-limited-{TAG}/runs", token,
                 {"inputs": {"userMessage": f"script:{script}"}})["runId"]
    c.wait("the new run, live", lambda: c.css(f'tr[data-run-id="{newer}"]'), timeout=20)
    assert marker and c.attr("#run-search", "data-kept") == "yes", "not redrawn"
    assert "process=console-limited" in d.current_url
    # Search: the first characters of an id narrow the list; the whole id opens the run.
    c.one("#run-search").send_keys(limited[:10], Keys.ENTER)
    c.wait("only ids that start so", lambda: "q=" in d.current_url and c.css("table.runs tbody tr[data-run-id]")
           and all(r.get_attribute("data-run-id").startswith(limited[:10])
                   for r in c.css("table.runs tbody tr[data-run-id]")))
    c.one("#run-search").clear()
    c.one("#run-search").send_keys(limited, Keys.ENTER)
    c.wait("the run opened by its id", lambda: d.current_url.endswith(f"#/runs/{limited}"))
    c.one("section.waterfall")

    # The link to the exact message: the conversation scrolled to that Alternative, marked.
    c.go(f"#/runs/{answered_run}")
    link = c.one("a.message-link")
    alt = link.get_attribute("href").split("?alt=")[1]
    link.click()
    c.wait("the conversation at that message", lambda: "?alt=" in d.current_url and c.css("li.turn.linked"))
    assert c.attr("li.turn.linked", "data-alt-id") == alt
    in_view = d.execute_script("""const r = document.querySelector('li.turn.linked').getBoundingClientRect();
      return r.top >= 0 && r.top < window.innerHeight;""")
    assert in_view, "scrolled to the linked message"
    c.shot("27-linked-message")

    # A phone: the list and the waterfall fit 390 px, labels above full-width bars.
    with phone_width(d):
        c.go("#/runs")
        c.one(f'tr[data-run-id="{limited}"]')
        assert_fits_phone(d, "the run list is ")
        c.shot("28-runs-list-phone")
        shot_as(c, "runs-list-phone")
        c.go(f"#/runs/{limited}")
        c.one('li.wf-row[data-row="answer#r1"]')
        assert_fits_phone(d, "the run page is ")
        track = c.one('li.wf-row[data-row="answer"] .wf-track')
        assert track.size["width"] > 300, f"the bar keeps the phone's width: {track.size}"
        c.click(f'li.wf-row[data-row="{model_turn}"] button.wf-pick')
        assert "Model turn 1" in c.one("div.wf-detail").text
        c.d.execute_script("document.querySelector('section.waterfall').scrollIntoView()")
        c.shot("29-run-waterfall-phone")
        shot_as(c, "run-waterfall-phone")


def shot_as(c, name):
    """A screen also saved under its plain name, for docs/console/."""
    os.makedirs(SHOTS2, exist_ok=True)
    path = os.path.join(SHOTS2, f"{name}.png")
    c.d.save_screenshot(path)
    c.shots.append(path)


def neo4j_links(c):
    """An admin gets "Open in Neo4j Browser" on a run, a conversation and an Entity, with the
    lineage query in the Browser's editor; the address comes from GET /v1/me."""
    from urllib.parse import parse_qs, urlparse
    admin_token = os.environ["AIDEN_ADMIN_TOKEN"]
    me = call("GET", "/v1/me", admin_token)
    base = me.get("neo4jBrowserUrl")
    assert base and base.startswith("http") and "@" not in base, me
    # The Browser named is this graph's: the Neo4j server answering there advertises the Bolt
    # address the console's server uses (its discovery document, at the HTTP root).
    root = base.split("/browser")[0] + "/"
    with urllib.request.urlopen(root, timeout=10) as r:
        discovery = json.loads(r.read())
    bolt_port = os.environ["AIDEN_NEO4J_URI"].rsplit(":", 1)[1].split("/")[0]
    assert discovery.get("bolt_direct", "").endswith(f":{bolt_port}"), (base, discovery)
    started = call("POST", f"/v1/processes/console-steps-{TAG}/runs", admin_token,
                   {"inputs": {"q": "lineage", "tone": "plain"}})["runId"]
    conv = call("POST", "/v1/conversations", admin_token, {"title": f"Lineage {TAG}"})
    entity = call("POST", "/v1/entities", admin_token, {"name": f"Braga {TAG}", "summary": "A city"})
    admin = Console(browser())
    admin.shots = c.shots
    try:
        admin.go("")
        admin.click("#use-token")
        admin.one("#token").send_keys(admin_token)
        admin.click("#sign-in button[type=submit]")
        admin.one("#conversation-list")
        for hash_, label, literal in [(f"#/runs/{started}", "Run", started),
                                      (f"#/c/{conv['id']}", "Conversation", conv["id"]),
                                      (f"#/entities/{entity['uuid']}", "Entity", entity["uuid"])]:
            admin.go(hash_)
            href = admin.attr("a.neo4j-link", "href")
            assert href.startswith(base) and "cmd=edit" in href, href
            query = parse_qs(urlparse(href).query)["arg"][0]
            assert f"({label[0].lower()}:{label} " in query and f"'{literal}'" in query, query
            assert admin.attr("a.neo4j-link", "rel") == "noopener noreferrer"
        admin.go(f"#/runs/{started}")
        admin.one("a.neo4j-link")
        admin.shot("30-run-neo4j-link")
    finally:
        admin.d.quit()


def double_submit(c, token, agent):
    """Two submits at once (a double click, a key held down): one message, one answer."""
    d = c.d
    conv = call("POST", "/v1/conversations", token, {"title": f"Once {TAG}", "defaultProcessId": agent})
    c.go(f"#/c/{conv['id']}")
    c.wait("the empty conversation", lambda: c.css("#message") and d.title == f"Once {TAG} · Aiden")
    Select(c.one('select[aria-label="Process to answer with"]')).select_by_value(agent)
    c.one("#message").send_keys('script:[{"answer": "just once"}]')
    d.execute_script("const f = document.querySelector('form.composer'); f.requestSubmit(); f.requestSubmit();")
    c.wait("the one answer", lambda: len(c.turns()) == 2 and c.status(1) == "valid"
           and c.content(1) == "just once", timeout=40)
    tree = call("GET", f"/v1/conversations/{conv['id']}/tree", token)
    assert len(tree["turns"]) == 2, f"two submits sent once: {len(tree['turns'])} turns"
    c.wait("the composer focused again", lambda: d.execute_script("return document.activeElement.id") == "message")


MARKDOWN = """Two steps:

- pack the **bags**
- take the `train`

```sh
echo "bon voyage"
ls -l
```

See [the timetable](https://example.com/trains).
<img src=x onerror="window.__xss=1"> [click](javascript:window.__xss=2)"""


def markdown_answer(c, token, agent):
    """An answer is Markdown (a list, a code block with Copy, a link that opens elsewhere) and
    its markup cannot run anything; the message that asked for it stays as it was typed."""
    d = c.d
    conv = call("POST", "/v1/conversations", token, {"title": "Markdown"})
    c.go(f"#/c/{conv['id']}")
    c.wait("the empty conversation", lambda: "Markdown" in c.one("h1").text)
    Select(c.one('select[aria-label="Process to answer with"]')).select_by_value(agent)
    # One line of JSON (Enter sends): the answer's new lines are `\n` escapes in it.
    c.one("#message").send_keys("script:" + json.dumps([{"answer": MARKDOWN}]), Keys.ENTER)
    c.wait("the Markdown answer", lambda: len(c.turns()) == 2 and c.status(1) == "valid", timeout=60)
    answer = c.one(".content", c.turn(1))
    items = [li.text for li in c.css("ul > li", answer)]
    assert items == ["pack the bags", "take the train"], items
    assert c.css("li strong", answer) and c.css("li code", answer)
    block = c.one(".code-block", answer)
    code = c.one("pre > code", block)
    assert code.get_attribute("textContent") == 'echo "bon voyage"\nls -l\n', code.get_attribute("textContent")
    # The fence names its language (sh): highlighted, the text unchanged.
    assert c.css("span.hljs-string", code) and c.css("span.hljs-built_in", code), code.get_attribute("innerHTML")
    copy = c.one("button.copy", block)
    assert copy.text == "Copy"
    link = c.one('a[href="https://example.com/trains"]', answer)
    assert link.get_attribute("target") == "_blank"
    assert link.get_attribute("rel") == "noopener noreferrer"
    # Nothing in it runs: no handler, no javascript: link, and the page saw no script.
    assert not c.css("img[onerror], [onerror]", answer)
    assert not c.css('a[href^="javascript:"], a[href*="javascript" i]', answer)
    assert "click" in answer.text
    time.sleep(0.5)  # an <img src=x> would have failed to load by now
    assert d.execute_script("return window.__xss") is None
    # The message that asked for it shows as typed.
    asked = c.one(".content", c.turn(0))
    assert not c.css("ul, pre, img, a", asked)
    assert "```" in asked.text and "<img src=x" in asked.text
    os.makedirs(SHOTS3, exist_ok=True)
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", c.turn(1))
    path = os.path.join(SHOTS3, "markdown.png")
    d.save_screenshot(path)
    c.shots.append(path)
    # Copy puts the code on the clipboard, or selects it where the clipboard is out of reach.
    copy.click()
    c.wait("copied or selected", lambda: copy.text != "Copy", timeout=5)
    said = copy.text
    assert said == "Copied" or said.startswith("Selected"), said
    if said.startswith("Selected"):
        assert d.execute_script("return String(window.getSelection())") == code.get_attribute("textContent")
    assert d.execute_script("return window.__xss") is None


def accounts(c):
    """People's accounts: the admin (signed in with the bootstrap token) creates a user on the
    Users page and makes a password link; the user opens it in another browser, sets a password,
    signs in by name and password, is signed in in a second tab too, changes something (CSRF),
    and signs out. The admin then sees the password set, revokes the user's token and disables
    them, and follows the link to their runs."""
    admin = Console(browser())
    admin.shots = c.shots
    person = Console(browser())
    person.shots = c.shots
    name = f"person-{TAG}"
    password = f"correct horse {TAG}"
    try:
        a = admin.d
        admin.go("")
        admin.click("#use-token")
        admin.one("#token").send_keys(os.environ["AIDEN_ADMIN_TOKEN"])
        admin.click("#sign-in button[type=submit]")
        admin.one("#conversation-list")
        admin.click('nav#nav a[href="#/users"]')
        admin.one("#create-user")
        admin.one("#new-user-name").send_keys(name)
        admin.click("#create-user button[type=submit]")
        shown = admin.attr("#new-user-token", "value")
        assert len(shown) > 20, shown
        user_id = admin.attr("div.new-user", "data-user-id")
        row = admin.one(f'tr.user[data-user-id="{user_id}"]')
        assert admin.one("td.has-password", row).text == "not set"
        admin.click("#new-user-link")
        url = admin.attr("#password-link-url", "value")
        assert url.startswith(BASE + "/#/password?token="), url
        admin.click("div.password-link button.copy")
        admin.wait("copied or selected", lambda: admin.one("div.password-link .copied").text)
        admin.extra("users")

        # Another browser: the link, a password, then sign-in by name and password.
        p = person.d
        p.get(url)
        person.one("#set-password")
        person.one("#new-password").send_keys("too short")
        person.one("#new-password-again").send_keys("too short")
        person.click("#set-password button[type=submit]")
        assert "#/password" in p.current_url, "a short password is not sent"
        person.one("#new-password").clear()
        person.one("#new-password-again").clear()
        person.one("#new-password").send_keys(password)
        person.one("#new-password-again").send_keys(password)
        person.click("#set-password button[type=submit]")
        assert "Your password is set" in person.one("#password-set").text
        assert "token=" not in p.current_url, "the spent link leaves the address bar"
        person.one("#name").send_keys(name)
        person.one("#password").send_keys("wrong password!")
        person.click("#sign-in button[type=submit]")
        assert "not accepted" in person.one("#sign-in-error").text
        person.one("#name").send_keys(name)
        person.one("#password").send_keys(password, Keys.ENTER)
        person.one("#conversation-list")
        assert name in person.one("#account-menu summary").text
        assert p.execute_script("return sessionStorage.getItem('aiden.token')") is None
        assert not person.css('nav#nav a[href="#/users"]'), "Users is for admins"
        first_tab = p.current_window_handle
        # A second tab is signed in by the cookie, and a change there carries the CSRF token.
        p.switch_to.new_window("tab")
        person.go("")
        person.one("#conversation-list")
        assert name in person.one("#account-menu summary").text
        person.one("#new-title").send_keys(f"Mine {TAG}")
        person.click("form.inline button[type=submit]")
        person.wait("the new conversation", lambda: "#/c/" in p.current_url)
        person.wait("its title", lambda: f"Mine {TAG}" in person.one("h1").text)
        # Sign out: this tab and, once it looks again, the first one are signed out.
        person.click("#account-menu summary")
        person.click("#sign-out")
        person.one("#sign-in #name")
        p.refresh()
        person.one("#sign-in #name")
        p.switch_to.window(first_tab)
        p.refresh()
        person.one("#sign-in #name")

        # The admin sees the password set; revokes the user's token; disables them.
        admin.go(f"#/users?q={user_id}")
        a.refresh()
        row = admin.one(f'tr.user[data-user-id="{user_id}"]')
        admin.wait("password set", lambda: admin.one(
            f'tr.user[data-user-id="{user_id}"] td.has-password').text == "set")
        admin.click(f'tr.user[data-user-id="{user_id}"] button.show-tokens')
        revoke = admin.one(f'div.tokens[data-user-id="{user_id}"] button.revoke')
        revoke.click()
        a.switch_to.alert.accept()
        admin.wait("the token revoked", lambda: "revoked" in admin.one(
            f'div.tokens[data-user-id="{user_id}"] tr.token').text)
        try:
            call("GET", "/v1/me", shown)
            raise RuntimeError("a revoked token still works")
        except AssertionError as e:
            assert "401" in str(e), e
        admin.click(f'tr.user[data-user-id="{user_id}"] button.toggle-disabled')
        admin.wait("disabled", lambda: admin.one(f'tr.user[data-user-id="{user_id}"]')
                   .get_attribute("data-disabled") == "yes")
        admin.click(f'tr.user[data-user-id="{user_id}"] button.toggle-disabled')
        admin.wait("enabled again", lambda: admin.one(f'tr.user[data-user-id="{user_id}"]')
                   .get_attribute("data-disabled") == "no")
        admin.click(f'tr.user[data-user-id="{user_id}"] a.user-runs')
        admin.wait("their runs", lambda: f"started by {name}" in admin.one("h1").text)  # by name
        assert admin.attr("#run-owner", "value") == name, "the owner box names them"
        # The admin's account menu: their own password.
        admin.click("#account-menu summary")
        admin.click("#set-password-link")
        admin.one("#own-password")
    finally:
        admin.d.quit()
        person.d.quit()


def node_class(c, scope, step):
    return c.attr(f'{scope} svg.dag g.node[data-step="{step}"]', "class") or ""


def settled_run(token, run_id, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        run = call("GET", f"/v1/runs/{run_id}", token)
        if run["status"] in ("completed", "failed", "canceled"):
            return run
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} did not settle")


def fork_compare_and_play(c, token):
    """Forks a settled three-step run from its last step, compares the fork with its original,
    and scrubs the fork's playback."""
    d = c.d
    started = call("POST", f"/v1/processes/console-steps-{TAG}/runs", token, {
        "inputs": {"q": 'script:[{"answer": "found three hotels"}]', "tone": "warm"}})
    original = started["runId"]
    assert settled_run(token, original)["status"] == "completed"
    c.go(f"#/runs/{original}")
    c.wait("the reply completed", lambda: "s-completed" in node_class(c, "div.run-content", "reply"))
    c.click('div.run-content svg.dag g.node[data-step="reply"]')
    c.click("section.step-detail button.fork-step")
    inputs = c.one("#fork-inputs")
    assert json.loads(inputs.get_attribute("value")) == {
        "q": 'script:[{"answer": "found three hotels"}]', "tone": "warm"}, inputs.get_attribute("value")
    # A version that does not exist: refused, and the form says why in words (FORK-3).
    c.one("#fork-version").send_keys("99")
    c.click("form.fork-form button[type=submit]")
    refused = c.one("p.fork-error")
    assert "refused" in refused.text and "FORK-3" in refused.text, refused.text
    c.one("#fork-version").clear()
    d.execute_script("arguments[0].value = arguments[1]", inputs, json.dumps(
        {"q": 'script:[{"answer": "found three hotels"}]', "tone": "cheerful"}, indent=2))
    c.click("form.fork-form button[type=submit]")
    c.wait("the fork's page", lambda: "#/runs/" in d.current_url and original not in d.current_url)
    fork = d.current_url.split("#/runs/")[1]

    # The page redraws while the fork runs, so each look is retried until it holds.
    def forked_page():
        line = c.one("p.forked-from").text
        rows = c.css("div.run-content tr.reused")
        return ("Forked from" in line and original in line and "reply" in line
                # The reply written again; two steps reused (dimmed, labelled, nothing called).
                and "s-completed" in node_class(c, "div.run-content", "reply")
                and "reused" not in node_class(c, "div.run-content", "reply").split()
                and all("reused" in node_class(c, "div.run-content", s).split() for s in ("find", "summarize"))
                and len(rows) == 2 and all("reused" in r.text for r in rows)
                and c.attr("div.run-content tr.reused a.reused-link", "href")
                .endswith(f"#/runs/{original}"))
    c.wait("the fork's lineage and its two reused steps", forked_page)
    c.shot("21-fork")

    # The diff: the two reused steps and the reply with another input, side by side.
    c.click("a.compare-link")
    c.wait("the diff", lambda: f"/diff/{fork}" in d.current_url and len(c.css("tr.diff-row")) == 3)
    verdicts = {r.find_element(By.CSS_SELECTOR, "code").text: r.get_attribute("class")
                for r in c.css("tr.diff-row")}
    assert "v-reused" in verdicts["find"] and "v-reused" in verdicts["summarize"], verdicts
    assert "v-input_changed" in verdicts["reply"], verdicts
    assert "1 step differs" in c.one("p.diff-summary").text, c.one("p.diff-summary").text
    for side in ("a", "b"):
        assert "changed" in node_class(c, f"div.side-{side}", "reply").split(), side
    pair = c.one("tr.v-input_changed .diff-pair")
    assert "warm" in pair.text and "cheerful" in pair.text, pair.text
    c.shot("22-diff")

    # Playback of the fork: at the end all three are done; at the start none has begun; a few
    # events in, the first step is under way; Play runs on to the end.
    d.back()
    c.wait("the fork's page again", lambda: d.current_url.endswith(f"#/runs/{fork}"))
    where = c.wait("the whole log", lambda: (lambda t: t if t and "so far" not in t and not t.startswith("0 of")
                                            else None)(c.one(".playback-where").text))
    total = int(where.split(" of ")[1].split()[0])
    assert all("s-completed" in node_class(c, "section.playback", s) for s in ("find", "summarize", "reply"))
    scrubber = c.one("#playback-scrubber")
    d.execute_script("arguments[0].scrollIntoView()", c.one("section.playback"))
    scrubber.send_keys(Keys.HOME)
    c.wait("the start", lambda: c.one(".playback-where").text.startswith(f"0 of {total}"))
    assert all("s-none" in node_class(c, "section.playback", s) for s in ("find", "summarize", "reply"))
    assert not c.css("li.playback-event")
    scrubber.send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
    c.wait("three events in", lambda: c.one(".playback-where").text.startswith(f"3 of {total}"))
    assert len(c.css("li.playback-event")) == 3
    assert "s-none" not in node_class(c, "section.playback", "find"), "the first step has moved"
    assert "s-completed" not in node_class(c, "section.playback", "reply"), "the reply is not done yet"
    c.shot("23-playback")
    c.click("section.playback button.play")
    c.wait("played to the end", lambda: c.one(".playback-where").text.startswith(f"{total} of {total}"),
           timeout=total * 0.35 + 20)
    assert "s-completed" in node_class(c, "section.playback", "reply")
    kinds = [e.get_attribute("data-kind") for e in c.css("li.playback-event")]
    assert kinds.count("step.reused") == 2 and kinds[-1] == "run.completed", kinds


def continue_from_here(c, conversation):
    """A "Continue from here" branch is a sibling Turn: `< 2/2 >` on the message that started it
    takes the thread back to the earlier branch and forth again; the branch map names each Turn
    by its text."""
    c.go(f"#/c/{conversation}")
    c.wait("the conversation", lambda: len(c.turns()) == 4)
    earlier = c.content(2)
    c.click_in_turn("button.reply-here", 1)
    assert "Continuing from turn 2" in c.one("p.replying").text
    c.one("#message").send_keys('script:[{"answer": "from the branch"}]', Keys.ENTER)
    c.wait("the branch, counted with the message it sits beside",
           lambda: c.count(2) == "2/2" and "from the branch" in (c.content(2) or ""), timeout=40)
    c.shot("35-continued-from-here")
    c.click_in_turn("button.prev", 2)
    c.wait("the earlier branch", lambda: c.count(2) == "1/2" and c.content(2) == earlier)
    c.click_in_turn("button.next", 2)
    c.wait("the branch again", lambda: c.count(2) == "2/2" and "from the branch" in (c.content(2) or ""))
    c.click("details.branch-map summary")
    texts = c.wait("the branch map's texts",
                   lambda: [x.text for x in c.css("details.branch-map span.map-text")])
    assert any("from the branch" in t for t in texts), texts
    assert all(t.startswith("“") or t.startswith("(") for t in texts), texts
    c.shot("36-branch-map-text")


def regenerate_answer_only(c, conversation):
    """The last answer written again from a fork of its run: a new version, still the answer."""
    c.go(f"#/c/{conversation}")
    c.wait("the conversation", lambda: len(c.turns()) == 4 and c.count(3) == "2/2")
    c.click_in_turn("details.regen-menu summary", 3)  # Regenerate ▾
    c.click_in_turn("button.regenerate-answer-only", 3)
    c.wait("the answer regenerated", lambda: c.count(3) == "3/3" and c.status(3) == "valid"
           and c.content(3) == "third", timeout=40)
    c.shot("24-regenerated-answer-only")
    # Its run is a fork of the run that wrote the answer before.
    c.click_in_turn("a.run-link", 3)
    c.wait("its run's lineage", lambda: "Forked from" in c.one("p.forked-from").text)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"console test failed: {e}", file=sys.stderr)
        sys.exit(1)
