"""The timeline page in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by Selenium) against ``mnemo serve``'s app on the demo store, on a loopback port."""

from __future__ import annotations

import os
import shutil
import numpy as np
import pytest

from conftest import in_ci

pytestmark = pytest.mark.slow

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SELECTED = (168, 231, 255)  # BGR of the selected clip's fill, #ffe7a8 in timeline.css


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
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1000", "--lang=en-US"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def test_timeline_page_shows_people_clips_and_an_answer(demo_server, browser, tmp_path):
    import cv2
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(demo_server + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#track .clip")) == 2)
    people = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#people .person")]
    assert sorted(people) == ["Diane", "Sheila"]
    assert "2 clip(s) on 2026-11-20" in browser.find_element(By.ID, "timeline-title").text

    browser.find_element(By.ID, "ask-input").send_keys("Where is Sheila from?")
    browser.find_element(By.CSS_SELECTOR, "#ask-form button").click()
    wait.until(lambda d: "Chicago" in d.find_element(By.ID, "answer-text").text)
    # the cited clip is opened, with its frame at the cited moment from the original file
    wait.until(lambda d: d.execute_script(
        "const i = document.getElementById('clip-frame'); return i.complete && i.naturalWidth > 0"))
    assert "&at=" in browser.find_element(By.ID, "clip-frame").get_attribute("src")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#track .clip.cited")) == 1
    assert "Sheila is from Chicago." in browser.find_element(By.ID, "clip-memories").text

    browser.find_element(By.ID, "search-input").send_keys("New Jersey")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait.until(lambda d: "New Jersey" in d.find_element(By.ID, "result-list").text)

    shot = tmp_path / "timeline.png"
    browser.execute_script("window.scrollTo(0, 0)")
    assert browser.save_screenshot(str(shot))
    image = cv2.imread(str(shot))
    assert image is not None and image.shape[1] == 1280
    # the selected (cited) clip is drawn on the time axis: a wide block of its fill colour
    selected = np.all(np.abs(image.astype(int) - SELECTED) <= 3, axis=2)
    assert selected.sum() > 20_000, f"the selected clip's block covers only {selected.sum()} pixels"
    box = browser.find_element(By.ID, "clip-frame").rect  # the cited frame, on screen and not blank
    frame = image[int(box["y"]):int(box["y"] + box["height"]), int(box["x"]):int(box["x"] + box["width"])]
    assert frame.shape[0] > 100 and frame.std() > 20, "the clip's frame is missing from the screenshot"
    text = browser.find_element(By.TAG_NAME, "body").text
    for expected in ("Diane", "Sheila", "Chicago", "Answered."):
        assert expected in text
