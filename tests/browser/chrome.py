"""Debian's headless Chromium, as the browser tests drive it (Selenium): told to reach
nothing (every host name resolves to nothing, every request goes to a dead proxy on
loopback, its background services are off), and what they read of a page it drew."""

from __future__ import annotations

import shutil

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
NO_NETWORK = [
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
    "--proxy-server=127.0.0.1:9",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-pings",
    "--no-first-run",
    "--metrics-recording-only",
]


def problems(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def requests(driver) -> list[str]:
    import json

    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


# What a page must not do at a width, as the browser laid it out: scroll sideways, show
# an image it could not draw, or draw text beyond its own box.
LAYOUT = """
const out = {overflow: 0, empty: [], spill: []};
out.overflow = document.documentElement.scrollWidth - window.innerWidth;
for (const e of document.querySelectorAll('figure svg, img')) {
  const r = e.getBoundingClientRect();
  if (r.width < 1 || r.height < 1 || (e.tagName === 'IMG' && !e.naturalWidth))
    out.empty.push(e.outerHTML.slice(0, 80));
}
const text = 'p, li, h1, h2, h3, h4, caption, figcaption, th, td, summary, pre, code, nav a';
for (const e of document.querySelectorAll(text)) {
  const style = getComputedStyle(e);
  if (['auto', 'scroll'].includes(style.overflowX)) continue;
  if (e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0)
    out.spill.push(e.tagName + ': ' + e.textContent.trim().slice(0, 60));
}
// an answer's table wider than its box (a ratio scrolled out of sight)
out.answers = [];
for (const e of document.querySelectorAll('.answer .scroll')) {
  if (e.scrollWidth > e.clientWidth + 1) out.answers.push(e.textContent.trim().slice(0, 60));
}
// plot text drawn smaller than 10 px: its font size in the SVG's units, scaled as shown
out.small = [];
for (const svg of document.querySelectorAll('figure svg')) {
  const box = svg.viewBox.baseVal;
  const scale = box && box.width ? svg.getBoundingClientRect().width / box.width : 1;
  for (const t of svg.querySelectorAll('text')) {
    const px = parseFloat(getComputedStyle(t).fontSize) * scale;
    if (px < 10 && t.textContent.trim()) out.small.push(t.textContent.trim() + ' ' + px.toFixed(1));
  }
}
return out;
"""
