"""Drives `typhon-rec live`'s page in Chromium (Playwright, the system browser) for
tests/live_browser.rs. Usage: live_browser.py URL SCREENSHOT [--expect-live]

Prints "live-checked" on a line of its own once the checks made while the recording runs
are done (the Rust test then ends the demo: the recording runs for as long as the page needs,
however slowly Chromium starts), then one JSON object: what the page showed. Exits 3 when
Playwright is missing (the Rust test skips then), 1 on a failed check (the reason on stderr)."""

import json
import sys
import time

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    print("playwright is not installed (pip install playwright==1.49.0)", file=sys.stderr)
    sys.exit(3)

CHROMIUM = "/usr/bin/chromium"


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def main():
    url, shot = sys.argv[1], sys.argv[2]
    expect_live = "--expect-live" in sys.argv[3:]
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        # The page forbids eval (CSP default-src 'self'); Playwright's waits evaluate strings.
        page = browser.new_page(viewport={"width": 1200, "height": 860}, bypass_csp=True)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url)
        role = lambda r: page.locator(f'[data-role="{r}"]')

        # Ticks arrive by server-sent events.
        page.wait_for_function(
            "() => Number(document.querySelector('[data-role=\"tick-count\"]').textContent.replace(/,/g, '')) > 0",
            timeout=30_000,
        )
        out["first_state"] = role("state").text_content()
        if expect_live and out["first_state"].lower() not in ("live", "finishing"):
            fail(f"expected the recording live at first, the page says {out['first_state']!r}")
        page.wait_for_function(
            "() => document.querySelectorAll('[data-role=\"span-table\"] tbody tr').length > 0",
            timeout=30_000,
        )
        out["span_names"] = page.eval_on_selector_all(
            '[data-role="span-table"] tbody tr td:first-child', "tds => tds.map(t => t.textContent)"
        )

        # Pause holds the chart; a click on a bar opens its flame chart.
        page.click("#pause")
        out["paused_label"] = page.inner_text("#pause")
        box = page.locator('[data-role="tick-chart"] .u-over').bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5)
        page.mouse.click(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5)
        page.wait_for_function(
            "() => Number(document.querySelector('[data-role=\"flame\"]').dataset.spans || 0) > 0",
            timeout=15_000,
        )
        flame = role("flame")
        out["flame_tick"] = flame.get_attribute("data-tick")
        out["flame_lanes"] = int(flame.get_attribute("data-lanes"))
        out["flame_spans"] = int(flame.get_attribute("data-spans"))
        out["flame_threads"] = flame.get_attribute("data-threads").split(",")
        # Hover the first drawn span: the tooltip names its duration and trace id.
        role("flame").scroll_into_view_if_needed()
        rect = page.evaluate(
            "() => { const c = document.querySelector('#flame').getBoundingClientRect(); return {x: c.x, y: c.y}; }"
        )
        lx, ly = (int(v) for v in flame.get_attribute("data-longest").split(","))
        page.mouse.move(rect["x"] + lx, rect["y"] + ly)
        tip = page.locator("#tip")
        out["tooltip"] = tip.inner_text() if tip.is_visible() else None

        # Resume: the counters' chart (drawn while following) names the demo's counters.
        page.click("#pause")
        page.wait_for_function(
            "() => (document.querySelector('[data-role=\"counter-chart\"]').dataset.counters || '').split(',').includes('entities') && "
            "Number(document.querySelector('[data-role=\"counter-chart\"]').dataset.points || 0) > 0",
            timeout=15_000,
        )
        cc = role("counter-chart")
        out["counter_series"] = cc.get_attribute("data-counters").split(",")
        out["counter_points"] = int(cc.get_attribute("data-points"))
        out["counter_legend"] = page.eval_on_selector_all(
            '[data-role="counter-legend"] .counter-name', "ns => ns.map(n => n.textContent)"
        )
        out["counter_canvas"] = page.locator('[data-role="counter-chart"] canvas').count()
        out["state_when_checked"] = role("state").text_content()
        # The test ends the demo now; wait for the end of the recording.
        print("live-checked", flush=True)
        page.wait_for_function(
            "() => document.querySelector('[data-role=\"state\"]').textContent === 'finished'",
            timeout=120_000,
        )
        # The last update after the switch: the record count settles.
        last, same_since = None, time.time()
        while time.time() - same_since < 1.5:
            n = role("records").inner_text()
            if n != last:
                last, same_since = n, time.time()
            time.sleep(0.25)
        out["state"] = role("state").text_content()
        out["records"] = int(last.replace(",", ""))
        out["ticks"] = int(role("tick-count").inner_text().replace(",", ""))
        out["losses"] = role("losses").inner_text()
        page.click("#pause")
        page.click("#worst")
        # The worst tick's flame chart (its spans are kept past the detail).
        page.wait_for_function(
            "() => document.querySelector('#worst').dataset.tick !== undefined && "
            "document.querySelector('[data-role=\"flame\"]').dataset.tick === document.querySelector('#worst').dataset.tick",
            timeout=15_000,
        )
        out["worst_tick"] = page.get_attribute("#worst", "data-tick")
        out["worst_flame_tick"] = flame.get_attribute("data-tick")
        out["worst_flame_spans"] = int(flame.get_attribute("data-spans") or 0)
        # The whole page: state, losses, ticks, spans, commands, flame chart and counters.
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=shot, full_page=True, type="png")
        out["errors"] = errors
        host = url.split("/")[2]
        out["foreign_requests"] = [r for r in requests if r.split("/")[2] != host]
        browser.close()
    print(json.dumps(out))


main()
