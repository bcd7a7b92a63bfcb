"""The report as a person sees it: the demo's broken sandbox fleet, the nightly job run for real,
`gtid-audit report` written, then opened in headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium) from the file, with no server behind it.

Needs the Debian packages ``chromium`` and ``chromium-driver`` (and ``graphviz`` for ``dot``):
without them the tests fail and say what to install.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.delta_io import read_arrow
from tests.cli.test_demo import EXPECTED

pytestmark = [pytest.mark.mysql, pytest.mark.spark, pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DOC = ROOT / "docs" / "img" / "report.png"


def _need(binary: str, package: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(f"{binary!r} is not installed: the report's browser test needs Debian's {package!r} package "
                    f"(apt-get install -y chromium chromium-driver graphviz)", pytrace=False)
    return path


@pytest.fixture(scope="module")
def demo_run(demo_night, tmp_path_factory):
    """The demo's faults on the standard sandbox fleet, the nightly job run once (the session's
    demo night, tests/fixtures/demo.py), the report written by the command a person types:
    (warehouse, config, run_id, report path)."""
    _need("dot", "graphviz")
    tmp = tmp_path_factory.mktemp("report-demo")
    warehouse, config = demo_night.warehouse, demo_night.config
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp / "report.html"
    proc = subprocess.run([sys.executable, "-m", "jobs.cli", "report", "--config", str(config), "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip() == str(out)
    assert "\u2501" not in proc.stderr  # no progress bar when stderr is not a terminal
    assert "Arrow's memory pool: system" in proc.stderr  # chosen before pyarrow loaded (docs/benchmarks.md, "Stop 41")
    run_id = read_arrow(str(warehouse), "run_summary").to_pylist()[0]["run_id"]
    return warehouse, config, run_id, out


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module, with its console and network logs kept."""
    chromium = _need("chromium", "chromium")
    driver_path = _need("chromedriver", "chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1800", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser, path: Path):
    browser.get(path.resolve().as_uri())
    browser.get_log("browser")       # start each test with empty logs
    browser.get_log("performance")
    browser.get(path.resolve().as_uri())
    return browser


def _legend(browser) -> dict[str, str]:
    """What the legend says each colour means: legend text -> computed colour."""
    return browser.execute_script("""
        const out = {};
        document.querySelectorAll('.legend-item').forEach(item => {
          out[item.textContent.trim()] = getComputedStyle(item.querySelector('.swatch')).backgroundColor;
        });
        return out;""")


def _edges(browser) -> dict[tuple[str, str], dict]:
    """Every arrow of every topology graph: (source, replica) -> its colour, label and tooltip."""
    edges = browser.execute_script("""
        const out = [];
        document.querySelectorAll('.graph g.edge').forEach(g => {
          const path = g.querySelector('path');
          const link = g.querySelector('a');
          const label = g.querySelector('text');
          out.push({title: g.querySelector('title').textContent, id: g.id,
                    colour: getComputedStyle(path).stroke, label: label ? label.textContent : '',
                    tooltip: link ? (link.getAttribute('xlink:title') || link.getAttribute('title')) : null,
                    cluster: g.closest('details.cluster').dataset.cluster});
        });
        return out;""")
    out = {}
    for e in edges:
        source, replica = e["title"].split("->")
        out[(source, replica, e["label"])] = e
    return out


def _nodes(browser) -> dict[tuple[str, str], str]:
    """Every server box: (cluster, server) -> the colour of its outline."""
    nodes = browser.execute_script("""
        const out = [];
        document.querySelectorAll('.graph g.node').forEach(g => {
          const shape = g.querySelector('path, polygon');
          out.push([g.closest('details.cluster').dataset.cluster, g.querySelector('title').textContent,
                    getComputedStyle(shape).stroke]);
        });
        return out;""")
    return {(c, n): colour for c, n, colour in nodes}


def _rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def _worst(severities) -> str:
    return min(severities, key=["critical", "warning", "info"].index)


def test_every_injected_fault_is_on_its_edge_in_its_colour(demo_run, browser):
    """Each pair fault of the demo colours exactly its source->replica arrow with the legend's
    colour of its worst severity; server faults colour their server's box."""
    warehouse, _, run_id, report = demo_run
    _open(browser, report)
    legend = _legend(browser)
    colour_of = {"critical": legend["critical finding"], "warning": legend["warning finding"]}
    findings = [f for f in read_arrow(str(warehouse), "findings", run_id).to_pylist() if f["status"] == "open"]
    severity = {(f["check_id"], f["server"], f["source"], f["channel"]): f["severity"] for f in findings}
    expected_pairs: dict[tuple[str, str, str], list[str]] = {}
    expected_checks: dict[tuple[str, str, str], set[str]] = {}
    expected_servers: dict[str, list[str]] = {}
    for key in EXPECTED:
        check_id, server, source, channel = key
        if source is None:
            expected_servers.setdefault(server, []).append(severity[key])
        else:
            expected_pairs.setdefault((source, server, channel), []).append(severity[key])
            expected_checks.setdefault((source, server, channel), set()).add(check_id)
    edges = _edges(browser)
    # the standard topology's five channels and the demo's delayed replica, each drawn once
    assert len(edges) == 6, sorted(edges)
    for pair, severities in sorted(expected_pairs.items()):
        assert pair in edges, f"no arrow {pair[0]} -> {pair[1]} (channel {pair[2]!r}) in {sorted(edges)}"
        assert edges[pair]["colour"] == colour_of[_worst(severities)], (pair, severities, edges[pair])
        # each fault on its own arrow (an info finding that restates one, e.g. failover readiness
        # following from errant_transactions, may sit beside it)
        named = set(re.findall(r"^(?:CRITICAL|WARNING) (\w+)", edges[pair]["tooltip"], re.M))
        assert named == expected_checks[pair], (pair, edges[pair]["tooltip"])
    nodes = _nodes(browser)
    for server, severities in expected_servers.items():
        boxes = [colour for (cluster, name), colour in nodes.items() if name == server]
        assert boxes and set(boxes) == {colour_of[_worst(severities)]}, (server, severities, boxes)
    # the hover text of an arrow names its findings
    errant = edges[("orders-src", "orders-r2", "")]
    assert "errant_transactions" in errant["tooltip"] and "CRITICAL" in errant["tooltip"]


def test_healthy_pairs_and_servers_are_green(demo_run, browser):
    """Every channel without a fault is drawn in the legend's 'healthy' colour, and only those: the
    delayed replica (behind on purpose, said to be not at risk) and orders-r1 (promoted, it needs the
    delayed replica to apply its relay log first, a catch-up step of the advice since model v3, not a
    warning: a fresh-user trial read its orange arrow beside "not at risk" as a contradiction); every
    server box without a fault of its own is green, and only those."""
    _, _, _, report = demo_run
    _open(browser, report)
    green = _legend(browser)["healthy: audited, no finding"]
    assert green == _rgb("#2e7d32")
    faulty = {(source, server, channel) for _, server, source, channel in EXPECTED if source is not None}
    edges = _edges(browser)
    healthy = {pair: e for pair, e in edges.items() if pair not in faulty}
    assert set(healthy) == {("orders-src", "orders-delayed", ""), ("orders-src", "orders-r1", "")}
    assert all(e["colour"] == green for e in healthy.values()), healthy
    assert all(e["colour"] != green for pair, e in edges.items() if pair in faulty)
    delayed = edges[("orders-src", "orders-delayed", "")]["tooltip"]
    assert "SOURCE_DELAY = 300 s" in delayed and "not at risk" in delayed, delayed
    assert "SOURCE_DELAY" not in edges[("orders-src", "orders-r1", "")]["tooltip"]
    nodes = _nodes(browser)
    server_faults = {server for _, server, source, _ in EXPECTED if source is None}
    # an info finding of a server's own (orders-r1's no_safe_failover_candidate, which names the
    # critical on orders-r3 it follows from) draws its box in the info colour, not green
    warehouse, _, run_id, _ = demo_run
    info_only = {f["server"] for f in read_arrow(str(warehouse), "findings", run_id).to_pylist()
                 if f["status"] == "open" and f["source"] is None and f["severity"] == "info"} - server_faults
    assert {name for _, name in nodes if name not in server_faults} == \
        {"orders-src", "orders-r1", "orders-delayed", "orders-r2", "orders-r3", "billing-r1"}
    for (cluster, name), colour in nodes.items():
        assert (colour == green) == (name not in server_faults | info_only), (cluster, name, colour)


def test_clicking_an_edge_shows_its_evidence(demo_run, browser):
    """A click on the errant arrow shows the errant GTID set, the sets compared and the SQL to run."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    warehouse, _, run_id, report = demo_run
    _open(browser, report)
    finding = next(f for f in read_arrow(str(warehouse), "findings", run_id).to_pylist()
                   if f["check_id"] == "errant_transactions" and f["server"] == "orders-r2")
    edge_id = _edges(browser)[("orders-src", "orders-r2", "")]["id"]
    path = browser.find_element(By.CSS_SELECTOR, f"g#{edge_id} path")
    ActionChains(browser).move_to_element(path).click().perform()
    panel = browser.find_element(By.ID, "evidence").text
    assert "orders-src → orders-r2" in panel
    assert finding["gtid_set"] in panel
    assert json.loads(finding["evidence"])["source_gtid_executed"] in panel
    assert "SET GTID_NEXT=" in panel
    # and a healthy arrow says so
    healthy_id = _edges(browser)[("orders-src", "orders-delayed", "")]["id"]
    ActionChains(browser).move_to_element(browser.find_element(By.CSS_SELECTOR, f"g#{healthy_id} path")).click().perform()
    assert "Healthy: audited, no finding" in browser.find_element(By.ID, "evidence").text


def _visible_rows(browser) -> list[list[str]]:
    return browser.execute_script("""
        return Array.from(document.querySelectorAll('#findings-table tbody tr'))
          .map(tr => Array.from(tr.cells).map(td => td.textContent));""")


def test_filtering_the_findings_table(demo_run, browser):
    """Choosing a severity, a cluster or a check shows exactly the matching findings; a check
    links to the text of `gtid-audit explain`."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from jobs.audit import explain_text

    warehouse, _, run_id, report = demo_run
    _open(browser, report)
    findings = [f for f in read_arrow(str(warehouse), "findings", run_id).to_pylist() if f["status"] == "open"]
    assert len(_visible_rows(browser)) == len(findings)

    def choose(name: str, value: str) -> list[list[str]]:
        Select(browser.find_element(By.ID, f"filter-{name}")).select_by_value(value)
        return _visible_rows(browser)

    rows = choose("severity", "critical")
    assert rows and {r[0] for r in rows} == {"critical"}
    assert len(rows) == sum(1 for f in findings if f["severity"] == "critical")
    rows = choose("cluster", "orders")
    assert {r[2] for r in rows} == {"orders"}
    assert sorted(r[3] for r in rows) == sorted(f["server"] for f in findings
                                                if f["severity"] == "critical" and f["cluster"] == "orders")
    choose("severity", "")
    rows = choose("check", "replication_stopped")
    assert [r[3] for r in rows] == ["orders-r3"]  # the cluster filter still holds
    rows = choose("cluster", "")
    assert sorted(r[3] for r in rows) == ["billing-r1", "orders-r3"]
    assert "2 of" in browser.find_element(By.ID, "filter-count").text

    browser.find_element(By.CSS_SELECTOR, "#findings-table a.explain-link").click()
    explanation = browser.find_element(By.ID, "explain-replication_stopped")
    assert explanation.get_attribute("open") is not None
    assert explain_text("replication_stopped").splitlines()[0] in explanation.text


def test_no_console_error_and_no_request_leaves_the_file(demo_run, browser, tmp_path):
    """Opening and using the report logs no console error and requests nothing but the file itself;
    the screenshot is kept with the test's output (and copied to docs/img with GTID_AUDIT_UPDATE_DOCS=1)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _, _, _, report = demo_run
    _open(browser, report)
    for path in browser.find_elements(By.CSS_SELECTOR, ".graph g.edge path")[:2]:
        ActionChains(browser).move_to_element(path).click().perform()
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("")
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    urls = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    assert urls, "the performance log recorded no request at all: the network log is not working"
    assert [u for u in urls if not u.startswith(("file://", "data:", "about:"))] == []
    assert {u for u in urls if u.startswith("file://")} == {report.resolve().as_uri()}

    errant = _edges(browser)[("orders-src", "orders-r2", "")]["id"]
    ActionChains(browser).move_to_element(browser.find_element(By.CSS_SELECTOR, f"g#{errant} path")).click().perform()
    browser.execute_script("window.scrollTo(0, 0)")
    # the picture: the fleet at a glance, the graphs and the evidence beside them (the window's
    # height includes the browser's own bars)
    height = browser.execute_script("return document.querySelector('#clusters').getBoundingClientRect().bottom"
                                    " + window.outerHeight - window.innerHeight")
    browser.set_window_size(1400, max(900, int(height) + 20))
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    if os.environ.get("GTID_AUDIT_UPDATE_DOCS") == "1":
        SCREENSHOT_DOC.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT_DOC)
    browser.set_window_size(1400, 1800)


def test_failover_readiness_appears_when_its_table_exists(demo_run, browser, tmp_path):
    """The job's failover_readiness table gives the page a failover section: each source's
    candidates in the model's rank with their verdicts, the failover findings of the demo's faults
    beside their candidate and their source; without the table the page has no such section."""
    from selenium.webdriver.common.by import By

    from jobs.report import write_report

    warehouse, _, run_id, report = demo_run
    rows = read_arrow(str(warehouse), "failover_readiness", run_id).to_pylist()
    _open(browser, report)
    section = browser.find_element(By.CSS_SELECTOR, "section#failover")
    blocks = {b.get_attribute("data-source"): b for b in section.find_elements(By.CSS_SELECTOR, ".failover-source")}
    # every source with replicas; orders-delayed is a candidate of orders-src like any replica
    assert set(blocks) == {r["source"] for r in rows} == {"orders-src", "orders-r1", "billing-src"}
    ranked = {source: [tr.text.split()[:3] for tr in block.find_elements(By.CSS_SELECTOR, "tbody tr")]
              for source, block in blocks.items()}
    for source, lines in ranked.items():
        by_rank = sorted({(r["candidate_rank"], r["candidate"], r["verdict"]) for r in rows if r["source"] == source})
        assert lines == [[str(n), c, v] for n, c, v in by_rank], (source, lines, by_rank)
    verdicts = {(source, line[1]): line[2] for source, lines in ranked.items() for line in lines}
    assert set(verdicts) == {("orders-src", "orders-r1"), ("orders-src", "orders-r2"),
                             ("orders-src", "orders-delayed"), ("orders-src", "billing-r1"),
                             ("orders-r1", "orders-r3"), ("billing-src", "billing-r1")}
    # the errant replicas would hand their GTIDs on; orders-src still has a safe candidate, first
    assert verdicts[("orders-src", "orders-r2")] == verdicts[("billing-src", "billing-r1")] == "propagates_errant"
    assert ranked["orders-src"][0][2] in ("safe", "safe_after_catch_up")
    # the failover findings (info ones too: they name their root cause) sit on their candidate's row
    # and beside their source
    open_findings = [f for f in read_arrow(str(warehouse), "findings", run_id).to_pylist() if f["status"] == "open"]
    unsafe = {(f["source"], f["server"]) for f in open_findings if f["check_id"] == "failover_candidate_unsafe"}
    assert {(source, server) for check, server, source, _ in EXPECTED if check == "failover_candidate_unsafe"} <= unsafe
    flagged = {(source, tr.text.split()[1]) for source, block in blocks.items()
               for tr in block.find_elements(By.CSS_SELECTOR, "tbody tr") if "failover_candidate_unsafe" in tr.text}
    assert flagged == unsafe
    no_safe = {f["server"] for f in open_findings if f["check_id"] == "no_safe_failover_candidate"}
    assert {source for source, block in blocks.items()
            if "no_safe_failover_candidate" in block.find_element(By.TAG_NAME, "h3").text} == no_safe

    copy = tmp_path / "warehouse"
    shutil.copytree(warehouse, copy)
    shutil.rmtree(copy / "failover_readiness")
    page = write_report(str(copy), run_id, tmp_path / "without-failover.html", progress=False)
    _open(browser, Path(page))
    assert browser.find_elements(By.CSS_SELECTOR, "section#failover") == []


def test_default_location_is_beside_the_alert_feed(demo_run, tmp_path):
    """Without --out the report goes to <warehouse>/_reports/<run_date>/<run_id>.html."""
    from jobs.report import write_report

    warehouse, _, run_id, _ = demo_run
    copy = tmp_path / "warehouse"
    shutil.copytree(warehouse, copy)
    page = write_report(str(copy), progress=False)
    run_date = read_arrow(str(warehouse), "runs", run_id).to_pylist()[0]["run_date"]
    assert page == copy / "_reports" / run_date.isoformat() / f"{run_id}.html"
    assert re.search(rf"run <code>{re.escape(run_id)}</code>", page.read_text())
    assert (copy / "_alert_feed" / run_date.isoformat()).is_dir()
