"""How long the console's main actions take, measured inside the page: `performance.now()` just
before the click (or the key, or the submit), and again at the first animation frame after the
page shows the result (the condition below holds). The model's own time is left out: an answer
is timed to its `generating` badge, when the server has taken the message and started the run,
never to the end of the streamed text. Each action runs several times; the table gives the
median and the slowest.
"""

import json
import statistics
import time

# How many times each action is timed.
REPEATS = 3

# Runs in the page (WebDriver's async script): the action, then a check every few ms until each
# result is in the DOM, each then timed at the next animation frame (so it has been drawn).
TIMED = """
const finish = arguments[arguments.length - 1];
const conds = [%(conds)s];
const got = conds.map(() => null);
const t0 = performance.now();
try { %(act)s } catch (e) { finish({error: 'the action threw: ' + e}); return; }
const check = () => {
  conds.forEach((cond, i) => {
    let ok = false;
    try { ok = got[i] === null && !!cond(); } catch (e) { ok = false; }
    if (ok) { got[i] = -1; requestAnimationFrame(() => { got[i] = performance.now() - t0; }); }
  });
  if (got.every((ms) => ms !== null && ms >= 0)) finish({ms: got});
  else if (performance.now() - t0 > %(limit)d) finish({error: 'timed out', ms: got});
  else setTimeout(check, 2);
};
check();
"""


def js_str(s):
    """A JavaScript string literal (JSON's is one)."""
    return json.dumps(s)


def click(selector):
    return f"document.querySelector({js_str(selector)}).click();"


def present(selector):
    return f"document.querySelector({js_str(selector)})"


class Timings:
    def __init__(self):
        self.rows = {}  # action -> [ms]

    def time(self, d, action, act, cond, more=(), limit_ms=20000):
        """Runs `act` (JavaScript) in the page and times how long until `cond` (a JavaScript
        expression) holds and is drawn, in ms, recorded under `action`; `more` are further
        `(action, cond)` pairs timed from the same start."""
        pairs = [(action, cond), *more]
        d.set_script_timeout(limit_ms / 1000 + 10)
        conds = ", ".join(f"() => ({c})" for _, c in pairs)
        got = d.execute_async_script(TIMED % {"act": act, "conds": conds, "limit": limit_ms})
        if "error" in got:
            raise AssertionError(f"timing {action!r}: {got}; page {d.current_url}")
        for (name, _), ms in zip(pairs, got["ms"]):
            self.rows.setdefault(name, []).append(ms)
        return got["ms"][0]

    def table(self):
        width = max(len(a) for a in self.rows)
        lines = [f"{'action':<{width}}  {'n':>2}  {'median':>8}  {'slowest':>8}",
                 f"{'-' * width}  --  --------  --------"]
        for action, ms in self.rows.items():
            lines.append(f"{action:<{width}}  {len(ms):>2}  {statistics.median(ms):>5.0f} ms"
                         f"  {max(ms):>5.0f} ms")
        return "\n".join(lines)

    def check(self, bound_ms, unbounded):
        """Every action but those named in `unbounded` took under `bound_ms` each time."""
        slow = [(a, round(max(ms))) for a, ms in self.rows.items()
                if a not in unbounded and max(ms) >= bound_ms]
        assert not slow, f"slower than {bound_ms} ms: {slow}\n{self.table()}"


# A bound this slow 2-core machine keeps with room to spare (its slowest bounded action took
# 1.4 s while other builds and tests shared the cores); it catches an action that hangs or
# degrades by whole seconds, not the 200 ms the console aims at (docs/console.md, "Timings").
BOUND_MS = 5000
# The Users page draws every user at once, so its figures grow with the graph's users (1.7 s to
# open with 1,200 on the tests' long-lived graph): printed, not bounded.
UNBOUNDED = {"open Users", "Users: show tokens", "Users: hide tokens", "Users: password link",
             "Users: disable", "Users: enable", "Users: create a user"}


# The pages of the navigation, each with what shows it loaded (its data, not "Loading…").
NAV_PAGES = [
    ("Conversations", "#/", "#conversation-list li"),
    ("Search", "#/search", "#search-q"),
    ("Memories", "#/memories", "#remember"),
    ("Runs", "#/runs", "table.runs tbody tr[data-run-id]"),
    ("Processes", "#/processes", "table tbody tr"),
    ("Tools", "#/tools", "table tbody tr"),
    ("Services", "#/services", "table tbody tr"),
    ("Connect a model", "#/connect", "li.connection"),
]


def navigation(t, c, pages=NAV_PAGES):
    """Each page of the navigation, opened by its link, to its data on screen."""
    c.go(pages[-1][1])
    c.one("main " + pages[-1][2])
    for _ in range(REPEATS):
        for name, href, shown in pages:
            t.time(c.d, f"open {name}", click(f'nav#nav a[href="{href}"]'),
                   f"location.hash === {js_str(href)} && {present('main ' + shown)}")


def chat(t, c, call, token, agent, tag):
    """In a conversation of its own: send (the message shown, then the answer under way), switch
    a message's version (both Turns follow), open the answer's run."""
    d = c.d
    conv = call("POST", "/v1/conversations", token, {"title": f"Timed {tag}", "defaultProcessId": agent})
    c.go(f"#/c/{conv['id']}")
    c.wait("the empty conversation", lambda: c.css("#message") and not c.turns())
    for i in range(REPEATS):
        mark = f"timed message {i} {tag}"
        c.one("#message").send_keys(f'script:[{{"answer": "answer {i}: {mark}"}}]')
        n = len(c.turns())
        turns = "document.querySelectorAll('li.turn')"
        t.time(d, "send → message shown", "document.querySelector('form.composer').requestSubmit();",
               f"[...{turns}].some((li) => li.textContent.includes({js_str(mark)}))",
               [("send → answer started (generating)",
                 f"{turns}.length === {n + 2} && {turns}[{n + 1}].dataset.status === 'generating'")])
        c.wait("the answer", lambda: len(c.turns()) == n + 2 and c.status(n + 1) == "valid", timeout=60)
    # A second version of the first message, answered: both Turns read < 2/2 >.
    c.one("button.edit-btn", c.turn(0)).click()
    editor = c.one('textarea[aria-label="Edited message"]')
    editor.clear()
    editor.send_keys('script:[{"answer": "the other version"}]')
    c.one("form.edit button[type=submit]").click()
    c.wait("< 2/2 > answered", lambda: c.count(0) == "2/2" and c.count(1) == "2/2"
           and c.status(1) == "valid", timeout=60)
    count = "document.querySelectorAll('li.turn .count')"
    for _ in range(REPEATS):
        for button, want in (("prev", "1/2"), ("next", "2/2")):
            t.time(d, "switch version (< n/m >)", click(f"li.turn button.{button}"),
                   f"{count}.length >= 2 && {count}[0].textContent === '{want}'"
                   f" && {count}[1].textContent === '{want}'")
    # The answer's run, from its link, to its DAG with the step done.
    for _ in range(REPEATS):
        t.time(d, "open the answer's run", click("li.turn a.run-link"),
               "location.hash.startsWith('#/runs/') && document.querySelector('svg.dag g.node.s-completed')"
               " && document.querySelector('section.waterfall li.wf-row')")
        d.back()
        c.wait("the conversation again", lambda: len(c.turns()) >= 2 and c.count(0))
    return conv["id"]


def run_list(t, c):
    """The run list: a run opened from its row; the id search narrowing the list."""
    d = c.d
    for _ in range(REPEATS):
        c.go("#/runs")
        row = c.one("table.runs tbody tr[data-run-id]")
        run_id = row.get_attribute("data-run-id")
        t.time(d, "open a run from the list", click(f'tr[data-run-id="{run_id}"] a'),
               f"location.hash.startsWith('#/runs/{run_id}') && document.querySelector('svg.dag g.node')")
        c.go("#/runs")
        c.one("table.runs tbody tr[data-run-id]")
        box = c.one("#run-search")
        box.clear()
        box.send_keys(run_id[:9])
        t.time(d, "search runs by id prefix", "document.querySelector('#run-search').form.requestSubmit();",
               f"location.hash.includes('q=') && [...document.querySelectorAll('table.runs tbody tr[data-run-id]')]"
               f".every((r) => r.dataset.runId.startsWith({js_str(run_id[:9])}))"
               " && document.querySelector('table.runs tbody tr[data-run-id]')")


def search(t, c, words):
    """Search from its page: the hits for `words`, listed."""
    d = c.d
    for _ in range(REPEATS):
        c.go("#/search")
        box = c.one("#search-q")
        box.clear()
        box.send_keys(words)
        t.time(d, "search (by words)", "document.querySelector('#search').requestSubmit();",
               "!document.querySelector('#searching') && document.querySelector('#hits li.hit')")


def users_page(t, admin, user_id):
    """The admins' Users page: opened (its first page), a user found by id, their tokens shown, a password link made, the user
    disabled and enabled again, a user created."""
    d = admin.d
    row = f'tr.user[data-user-id="{user_id}"]'
    for i in range(REPEATS):
        t.time(d, "open Users", click('nav#nav a[href="#/users"]'),
               f"location.hash === '#/users' && {present('#users tbody tr.user td.spend')}")
        box = admin.one("#user-q")
        box.clear()
        box.send_keys(user_id)
        t.time(d, "Users: find one by id", "document.querySelector('#user-filter').requestSubmit();",
               f"{present(row + ' td.spend')} && document.querySelectorAll('#users tr.user').length === 1")
        t.time(d, "Users: show tokens", click(f"{row} button.show-tokens"),
               present(f'div.tokens[data-user-id="{user_id}"] tr.token'))
        t.time(d, "Users: hide tokens", click(f"{row} button.show-tokens"),
               f"!{present(f'div.tokens[data-user-id={js_str(user_id)}]')}")
        t.time(d, "Users: password link", click(f"{row} button.password-link"),
               present(f'div.password-link[data-user-id="{user_id}"] #password-link-url'))
        t.time(d, "Users: disable", click(f"{row} button.toggle-disabled"),
               present(f'{row}[data-disabled="yes"]'))
        t.time(d, "Users: enable", click(f"{row} button.toggle-disabled"),
               present(f'{row}[data-disabled="no"]'))
        admin.one("#new-user-name").send_keys(f"timed-{i}-{int(time.time() * 1000)}")
        t.time(d, "Users: create a user", "document.querySelector('#create-user').requestSubmit();",
               "document.querySelector('div.new-user #new-user-token')?.value.length > 20"
               " && document.querySelector(`tr.user[data-user-id=\"${document.querySelector('div.new-user').dataset.userId}\"]`)")
        c_go_home(admin)


def c_go_home(c):
    c.go("#/")
    c.one("#conversation-list")
