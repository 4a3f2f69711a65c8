"""The timeline page in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by Selenium) against ``mnemo serve``'s app on the demo store, on a loopback port: signed in
by the link ``mnemo serve`` prints or on its form, under its Content-Security-Policy (nothing the
page needs refused, a frame of it refused)."""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

from conftest import in_ci, serving

pytestmark = pytest.mark.slow

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
LOADED = "return [...document.querySelectorAll(arguments[0])].map((i) => i.complete && i.naturalWidth > 0)"


def _require_chromium() -> None:
    if not (os.access(CHROMIUM, os.X_OK) and shutil.which("chromedriver")):
        why = "no Chromium: apt-get install chromium chromium-driver (make xtools does it as root)"
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture
def browser():
    _require_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.set_capability(
        "goog:loggingPrefs", {"browser": "ALL"}
    )  # the console: CSP violations show there
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def _screenshot(browser, tmp_path, name: str):
    """Save what the browser shows as ``name``.png, in ``$MNEMO_SCREENSHOTS`` when set (to look at
    them after a passing run: pytest deletes a passed test's ``tmp_path``), else in ``tmp_path``."""
    from pathlib import Path

    folder = Path(os.environ.get("MNEMO_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}.png"
    assert browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    return shot


def _drawn(browser, image, css: str):
    """The part of a screenshot ``image`` where the element ``css`` is, inside its border."""
    r = browser.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return [r.left, r.top, r.right, r.bottom]",
        css,
    )
    x0, y0, x1, y1 = (max(0, int(v)) for v in r)
    return image[y0 + 4 : y1 - 4, x0 + 4 : x1 - 4]


def _refused_by_the_csp(browser) -> list[str]:
    """What the console says the Content-Security-Policy blocked since the last call."""
    return [
        e["message"]
        for e in browser.get_log("browser")
        if "Content Security Policy" in e["message"]
    ]


def _sign_in_on_the_form(browser, served) -> None:
    """Open the page without a credential: its sign-in form (an inline script, allowed by its
    hash); a wrong token is refused, the right one opens the timeline."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(served.url + "/")
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    browser.find_element(By.ID, "token").send_keys("not the token")
    browser.find_element(By.CSS_SELECTOR, "#login button").click()
    wait.until(lambda d: d.find_element(By.ID, "status").text == "Wrong token.")
    field = browser.find_element(By.ID, "token")
    field.clear()
    field.send_keys(served.token)
    browser.find_element(By.CSS_SELECTOR, "#login button").click()
    wait.until(lambda d: d.find_elements(By.ID, "timeline-title"))


def test_timeline_page_shows_people_clips_and_an_answer(demo_server, browser, tmp_path):
    import cv2
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(demo_server.signin)  # the link `mnemo serve` prints
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#track .clip")) == 2)
    assert (
        browser.current_url == demo_server.url + "/"
    )  # the token left the address bar and the history
    people = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#people .person .name")]
    assert sorted(people) == ["Diane", "Sheila"]
    # each clip a keyframe of the video, each person their face, cut by the server
    wait.until(
        lambda d: all(
            d.execute_script(LOADED, f"#track .clip:nth-child({i}) img.thumb") or [False]
            for i in (1, 2)
        )
    )
    wait.until(lambda d: d.execute_script(LOADED, "#people .avatar img.face") == [True, True])
    assert "2 clip(s) on 2026-11-20" in browser.find_element(By.ID, "timeline-title").text
    # the day's digest: when, with whom, and moments that open the clip they cite
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#digest-moments li a"))
    assert browser.find_element(By.ID, "digest-title").text.startswith("Friday 20 November 2026")
    summary = browser.find_element(By.ID, "digest-summary").text
    assert summary.startswith("2 clip(s), ") and "Diane" in summary and "Sheila" in summary
    assert "Chicago" in browser.find_element(By.ID, "digest-moments").text
    browser.find_element(By.CSS_SELECTOR, "#digest-moments li a").click()
    wait.until(
        lambda d: (
            not d.find_element(By.ID, "clip").get_attribute("hidden")
            and d.find_element(By.ID, "clip-title").text.startswith("Clip ")
        )
    )
    # what is known about Sheila: her fact, citing its clip, and what she said of herself
    sheila = next(
        e
        for e in browser.find_elements(By.CSS_SELECTOR, "#people .person")
        if e.find_element(By.CLASS_NAME, "name").text == "Sheila"
    )
    sheila.find_element(By.CLASS_NAME, "show-profile").click()
    wait.until(lambda d: d.find_element(By.ID, "profile-title").text == "Sheila")
    facts = browser.find_element(By.ID, "profile-facts").text
    assert "Sheila is from Chicago." in facts and "last confirmed 2026-11-20" in facts
    assert "they all call me a Yankee" in browser.find_element(By.ID, "profile-statements").text
    browser.execute_script("document.getElementById('profile').scrollIntoView()")
    _screenshot(browser, tmp_path, "profile")
    browser.find_element(By.ID, "profile-close").click()
    wait.until(lambda d: d.find_element(By.ID, "profile").get_attribute("hidden"))

    browser.find_element(By.ID, "ask-input").send_keys("Where is Sheila from?")
    browser.find_element(By.CSS_SELECTOR, "#ask-form button").click()
    wait.until(lambda d: "Chicago" in d.find_element(By.ID, "answer-text").text)
    # the cited clip is opened, with its frame at the cited moment from the original file
    wait.until(
        lambda d: d.execute_script(
            "const i = document.getElementById('clip-frame'); return i.complete && i.naturalWidth > 0"
        )
    )
    assert "&at=" in browser.find_element(By.ID, "clip-frame").get_attribute("src")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#track .clip.cited")) == 1
    assert "Sheila is from Chicago." in browser.find_element(By.ID, "clip-memories").text

    browser.find_element(By.ID, "search-input").send_keys("New Jersey")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait.until(lambda d: "New Jersey" in d.find_element(By.ID, "result-list").text)

    browser.execute_script("window.scrollTo(0, 0)")
    image = cv2.imread(str(_screenshot(browser, tmp_path, "timeline")))
    assert image is not None and image.shape[1] == 1280
    # the selected (cited) clip is drawn on the time axis as its keyframe, and people with faces
    for css in ("#track .clip.selected", "#people .avatar"):
        drawn = _drawn(browser, image, css)
        assert drawn.shape[0] > 40 and drawn.std() > 20, f"{css} shows no picture in the screenshot"
    browser.execute_script("document.getElementById('clip').scrollIntoView()")
    wait.until(
        lambda d: d.execute_script(LOADED, "#clip-frames img") == [True] * 5
    )  # frames across the clip
    image = cv2.imread(str(_screenshot(browser, tmp_path, "clip-open")))
    frame = _drawn(browser, image, "#clip-frame")  # the cited frame, on screen and not blank
    assert frame.shape[0] > 100 and frame.std() > 20, (
        "the clip's frame is missing from the screenshot"
    )
    browser.set_window_size(
        1280, 1500
    )  # the whole page at once: docs/img/page.png is made from this one
    browser.execute_script("window.scrollTo(0, 0); document.getElementById('search-input').blur()")
    _screenshot(browser, tmp_path, "page")
    browser.set_window_size(1280, 1000)
    text = browser.find_element(By.TAG_NAME, "body").text
    for expected in ("Diane", "Sheila", "Chicago", "Answered."):
        assert expected in text
    assert _refused_by_the_csp(browser) == []  # the page's own scripts, styles and pictures all ran

    # another site framing the page (to make "Forget for good" a click on its own button): refused.
    # That site is served on loopback too (http://localhost:PORT, another origin): Chrome would
    # block a public page's frame of 127.0.0.1 before the policy is even read.
    with _framing_site(f"<iframe id='f' src='{demo_server.url}/'></iframe>") as site:
        browser.get(site)
        wait.until(lambda d: any("frame-ancestors 'none'" in m for m in _refused_by_the_csp(d)))
        browser.switch_to.frame("f")
        assert browser.execute_script("return location.href") == "chrome-error://chromewebdata/"
        browser.switch_to.default_content()


@contextlib.contextmanager
def _framing_site(html: str):
    """A web site on another loopback origin that serves ``html``; yields its URL."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(html.encode())

        def log_message(self, *_args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{server.server_port}/"
    finally:
        server.shutdown()


def test_people_panel_renames_and_undoes(people_store, browser, tmp_path):
    """Rename a person in the People panel: the panel, the timeline and the open clip's memories
    show the new name at once; a bad name is refused with the server's reason; Undo reverts."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def person(d, pid):
        return d.find_element(By.CSS_SELECTOR, f'#people .person[data-person-id="{pid}"]')

    def shown(d) -> tuple[str, str, str]:
        return (
            person(d, "character_2").find_element(By.CLASS_NAME, "name").text,
            " ".join(b.text for b in d.find_elements(By.CSS_SELECTOR, "#track .clip .who")),
            d.find_element(By.ID, "clip-memories").text,
        )

    with serving(people_store) as served:
        _sign_in_on_the_form(browser, served)
        wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
        wait.until(
            lambda d: (
                len(d.find_elements(By.CSS_SELECTOR, "#people .person")) == 2
                and len(d.find_elements(By.CSS_SELECTOR, "#track .clip")) == 2
            )
        )
        carol = person(browser, "character_2")
        assert (
            "unnamed" in carol.text
            and "voices: voice_2 · 2 clips" in carol.text
            and "2 clips" in carol.text
        )
        assert "Lisbon was lovely" in carol.find_element(By.CLASS_NAME, "quote").text
        browser.find_elements(By.CSS_SELECTOR, "#track .clip")[0].click()
        wait.until(lambda d: '<voice_2> said: "Lisbon was lovely' in shown(d)[2])

        form = person(browser, "character_2").find_element(By.CSS_SELECTOR, "form.rename")
        form.find_element(By.TAG_NAME, "input").send_keys("Carol")
        form.find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: shown(d)[0] == "Carol")
        _, who, memories = shown(browser)
        assert (
            "Carol" in who
            and 'Carol said: "Lisbon was lovely' in memories
            and "<voice_2>" not in memories
        )
        assert "named by you" in person(browser, "character_2").text
        assert (
            "Saved: name character_2 'Carol'" in browser.find_element(By.ID, "people-status").text
        )

        form = person(browser, "character_1").find_element(By.CSS_SELECTOR, "form.rename")
        form.find_element(By.TAG_NAME, "input").send_keys("<b>Al</b>")
        form.find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: "Not changed" in d.find_element(By.ID, "people-status").text)
        assert "< or >" in browser.find_element(By.ID, "people-status").text

        browser.execute_script("window.scrollTo(0, 0)")
        _screenshot(browser, tmp_path, "people")

        # an open profile shows the new name at once, and the old one after an undo
        person(browser, "character_2").find_element(By.CLASS_NAME, "show-profile").click()
        wait.until(lambda d: d.find_element(By.ID, "profile-title").text == "Carol")
        browser.find_element(By.ID, "people-undo").click()
        wait.until(lambda d: shown(d)[0] == "<character_2>")
        wait.until(lambda d: d.find_element(By.ID, "profile-title").text == "<character_2>")
        _, who, memories = shown(browser)
        assert "Carol" not in who and '<voice_2> said: "Lisbon was lovely' in memories
        assert (
            "Undid: name character_2 'Carol'" in browser.find_element(By.ID, "people-status").text
        )
        assert _refused_by_the_csp(browser) == []
    assert [o.op for o in people_store.people_ops()] == ["name", "undo"]


def test_a_clip_is_forgotten_from_the_page_after_a_preview(people_store, browser, tmp_path):
    """Open a clip, ask to forget it: the page says what would go and changes nothing; the second
    button forgets it, and the timeline shows the one clip left."""
    from pathlib import Path

    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with serving(people_store) as served:
        browser.get(served.signin)
        wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#track .clip")) == 2)
        browser.find_elements(By.CSS_SELECTOR, "#track .clip")[0].click()
        wait.until(lambda d: "Lisbon was lovely" in d.find_element(By.ID, "clip-memories").text)
        browser.find_element(By.ID, "clip-forget").click()
        wait.until(
            lambda d: "Would forget 1 clip(s)" in d.find_element(By.ID, "forget-status").text
        )
        assert people_store.has_clip("people-clip-0")
        _screenshot(browser, tmp_path, "forget")
        browser.find_element(By.ID, "clip-forget-confirm").click()
        wait.until(lambda d: "Forgotten: 1 clip(s)" in d.find_element(By.ID, "status").text)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#track .clip")) == 1
        assert not browser.find_element(By.ID, "clip").is_displayed()
        assert _refused_by_the_csp(browser) == []
    people_store.catch_up()
    assert not people_store.has_clip("people-clip-0") and people_store.has_clip("people-clip-1")
    assert not [
        p for p in Path(people_store.uri).rglob("*") if p.is_file() and b"Lisbon" in p.read_bytes()
    ]


def test_pictures_and_the_keyboard(picture_store, browser, tmp_path):
    """A screenshot clip and a video clip show their keyframes, a sound clip a neutral tile; the
    arrows move along the timeline, Enter opens a clip (its frames beside its words), Escape closes
    it, / goes to search; a forgotten clip's picture is gone."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    def focused(d) -> str:
        return d.execute_script("const a = document.activeElement; return a.dataset.clipId || a.id")

    def status_of(d, path: str) -> int:
        return d.execute_script("return fetch(arguments[0]).then((r) => r.status)", path)

    with serving(picture_store) as served:
        browser.get(served.signin)
        wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#track .clip")) == 3)
        for clip_id in ("pic-screen", "pic-video"):  # keyframes, as many as fit the tile
            thumbs = f'#track .clip[data-clip-id="{clip_id}"] img.thumb'
            wait.until(lambda d, thumbs=thumbs: all(d.execute_script(LOADED, thumbs) or [False]))
        wait.until(
            lambda d: d.find_elements(
                By.CSS_SELECTOR, '#track .clip.no-picture[data-clip-id="pic-audio"]'
            )
        )
        assert not browser.find_elements(
            By.CSS_SELECTOR, "#track .clip.no-picture:not([data-clip-id=pic-audio])"
        )
        _screenshot(browser, tmp_path, "pictures")

        first = browser.find_element(By.CSS_SELECTOR, "#track .clip")
        assert first.get_attribute("tabindex") == "0"  # one Tab stop for the timeline
        first.send_keys(Keys.ARROW_RIGHT)
        assert focused(browser) == "pic-video"
        browser.switch_to.active_element.send_keys(Keys.END)
        assert focused(browser) == "pic-audio"
        browser.switch_to.active_element.send_keys(Keys.ARROW_LEFT)
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        wait.until(
            lambda d: (
                d.find_element(By.ID, "clip").is_displayed()
                and d.find_element(By.ID, "clip-transcript").text
                == '<voice_1> said: "Where are you from?"'
            )
        )
        wait.until(lambda d: d.execute_script(LOADED, "#clip-frames img") == [True] * 5)
        frames = {
            i.get_attribute("src").split("at=")[1]
            for i in browser.find_elements(By.CSS_SELECTOR, "#clip-frames img")
        }
        assert len(frames) == 5  # five moments across the clip
        words, pictures = (
            browser.find_element(By.CSS_SELECTOR, c).rect for c in (".clip-words", ".clip-pictures")
        )
        assert (
            words["x"] >= pictures["x"] + pictures["width"]
            and words["y"] < pictures["y"] + pictures["height"]
        )
        video = browser.find_element(By.CSS_SELECTOR, '#track .clip[data-clip-id="pic-video"]')
        assert "selected" in video.get_attribute("class")
        _screenshot(browser, tmp_path, "clip")
        browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: not d.find_element(By.ID, "clip").is_displayed())
        assert focused(browser) == "pic-video"  # back on the clip it opened from
        browser.switch_to.active_element.send_keys("/")
        assert focused(browser) == "search-input"
        outline = browser.execute_script(
            "return getComputedStyle(document.activeElement).outlineStyle"
        )
        assert outline != "none"  # the focus is visible

        # a clip of sound only: its words take the whole width
        browser.find_element(By.CSS_SELECTOR, '#track .clip[data-clip-id="pic-audio"]').click()
        wait.until(
            lambda d: (
                "Testing, one, two." in d.find_element(By.ID, "clip-transcript").text
                and not d.find_element(By.CSS_SELECTOR, ".clip-pictures").is_displayed()
            )
        )

        # the screenshot clip, forgotten from the page: its picture is not served any more
        browser.find_element(By.CSS_SELECTOR, '#track .clip[data-clip-id="pic-screen"]').click()
        wait.until(lambda d: "Trip notes" in d.find_element(By.ID, "clip-memories").text)
        assert status_of(browser, "/thumb/pic-screen") == 200
        browser.find_element(By.ID, "clip-forget").click()
        wait.until(
            lambda d: not d.find_element(By.ID, "clip-forget-confirm").get_attribute("hidden")
        )
        browser.find_element(By.ID, "clip-forget-confirm").click()
        wait.until(lambda d: "Forgotten: 1 clip(s)" in d.find_element(By.ID, "status").text)
        assert status_of(browser, "/thumb/pic-screen") == 404
        assert status_of(browser, "/thumb/pic-video") == 200
        assert _refused_by_the_csp(browser) == []


def test_the_page_shows_the_quick_answer_then_the_reasoned_one_and_writes_the_day(
    talk_store, reason_server, browser, tmp_path
):
    """Where answers are reasoned (the packaged 0.5B here, on its own loopback server), the page
    shows the quick offline answer at once, then the model's, with its citations as links to the
    clips (or "not in memory" with the closest memories); the day can be written up by the same
    model, each sentence kept linking the clips it cites."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from control.grounding import ABSTAIN
    from control.planner import OfflinePlanner
    from control.reason import Reasoner
    from control.tools import MemoryTools
    from llm.client import ChatClient
    from mnemo.serve.service import MemoryService

    client = ChatClient(reason_server.base_url, reason_server.name, reason_server.api_key, 300.0, 1)
    reasoner = Reasoner(OfflinePlanner(MemoryTools(talk_store)), client)
    with serving(talk_store, service=MemoryService(talk_store, reasoner, writer=client)) as served:
        _sign_in_on_the_form(browser, served)
        wait = WebDriverWait(browser, 240, ignored_exceptions=(StaleElementReferenceException,))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#digest-moments li a"))
        browser.find_element(By.ID, "ask-input").send_keys(
            "When did Caroline go to the LGBTQ support group?"
        )
        browser.find_element(By.CSS_SELECTOR, "#ask-form button").click()
        wait.until(lambda d: d.find_element(By.ID, "answer-title").text == "Quick answer")
        assert browser.find_element(By.ID, "answer-text").text.startswith("Caroline said")
        wait.until(lambda d: d.find_element(By.ID, "status").text == "Answered.")
        reasoned = browser.find_element(By.ID, "reasoned-text").text
        links = browser.find_elements(By.CSS_SELECTOR, "#reasoned-citations a")
        assert reasoned and "reading the memories" not in reasoned
        assert links, "neither citations nor the closest memories are linked"
        if reasoned != ABSTAIN:
            assert "May 2023" in reasoned  # the date it worked out
        else:
            assert "closest memories" in browser.find_element(By.ID, "reasoned-citations").text
        browser.execute_script("document.getElementById('answer').scrollIntoView()")
        _screenshot(browser, tmp_path, "reasoned-answer")
        links[0].click()  # a citation opens its clip
        wait.until(lambda d: d.find_element(By.ID, "clip-title").text.startswith("Clip "))

        write = browser.find_element(By.ID, "digest-write")
        assert write.is_displayed()
        browser.execute_script("arguments[0].click()", write)
        wait.until(
            lambda d: d.find_element(By.ID, "digest-write-status").text.startswith(
                ("Written by", "Not written", "qwen")
            )
        )
        status = browser.find_element(By.ID, "digest-write-status").text
        written = browser.find_elements(By.CSS_SELECTOR, "#digest-written li")
        if status.startswith("Written by"):
            assert written and all(li.find_elements(By.TAG_NAME, "a") for li in written)
        browser.execute_script("document.getElementById('digest-section').scrollIntoView()")
        _screenshot(browser, tmp_path, "written-day")
        assert _refused_by_the_csp(browser) == []
