"""The admins' Users page shows what a user used: today's spend against their daily budget
(AGT-14) and their runs, linked to their run list; the figures are the API's (`GET /v1/users` items'
`usage`). The console's scripted model is priced (console-test.sh sets AIDEN_MODEL_PRICES), so the
user's answers earlier in the test cost money."""


def listed(call, admin_token, user_id):
    return next(u for u in call("GET", f"/v1/users?q={user_id}", admin_token)["items"]
                if u["id"] == user_id)


def find(admin, text):
    """The Users page's filter: only the users whose name contains `text` or id starts with it."""
    box = admin.one("#user-q")
    box.clear()
    box.send_keys(text)
    admin.one("#user-filter button[type=submit]").click()
    admin.wait(f"the users found by {text}", lambda: all(
        text in (r.get_attribute("data-user-id") + r.text) for r in admin.css("#users tr.user")))


def check(admin, call, admin_token, user_id, budget, shot_as, phone_width, assert_fits_phone):
    d = admin.d
    usage = listed(call, admin_token, user_id)["usage"]
    assert usage["spentTodayUsd"] > 0, f"the user's answers cost money: {usage}"
    assert 0 < usage["spentTodayUsd"] < budget, usage
    assert usage["runs"] > 0, usage
    # A user who never ran anything: nothing spent, no runs (found by the page's filter).
    idle = next(u for u in call("GET", "/v1/users?limit=200", admin_token)["items"]
                if u["usage"]["runs"] == 0 and not u.get("quota"))
    admin.go("#/users")
    find(admin, idle["id"])
    idle_row = admin.one(f'tr.user[data-user-id="{idle["id"]}"]')
    assert admin.one("td.spend", idle_row).text == "$0.00"
    assert admin.one("td.runs", idle_row).text == "none"
    find(admin, user_id)
    row_css = f'tr.user[data-user-id="{user_id}"]'
    row = admin.one(row_css)
    spend = admin.one("td.spend", row)
    assert float(spend.get_attribute("data-spent-usd")) == usage["spentTodayUsd"], \
        (spend.get_attribute("data-spent-usd"), usage)
    assert float(spend.get_attribute("data-budget-usd")) == budget
    assert f"of ${budget:.2f}" in spend.text, spend.text
    meter = admin.one("meter", spend)
    assert float(meter.get_attribute("value")) == usage["spentTodayUsd"]
    runs = admin.one("td.runs", row)
    assert int(runs.get_attribute("data-runs")) == usage["runs"], (runs.text, usage)
    assert f"{usage['runs']} runs" in runs.text, runs.text
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    admin.shot("33-users-spend")
    shot_as(admin, "users-spend")
    with phone_width(d):
        assert_fits_phone(d, "the Users page is ")
        d.execute_script("const r = arguments[0]; r.scrollIntoView({block: 'center'});"
                         "r.closest('.table-wrap').scrollLeft = r.querySelector('td.spend').offsetLeft - 8;",
                         admin.one(row_css))
        admin.shot("34-users-spend-phone")
        shot_as(admin, "users-spend-phone")
    # The count opens the user's runs.
    admin.one(f"{row_css} a.user-run-count").click()
    admin.wait("the user's runs", lambda: d.current_url.endswith(f"#/runs?owner={user_id}"))
    admin.one("tr[data-run-id]")
