//! The report and every run page, opened in a real headless Chromium: tables,
//! charts, links to the runs behind each number, and the demo experiment.

use super::*;

#[test]
fn the_report_tables_and_charts_hold_the_runs_numbers_in_a_real_browser() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let out = lab.run(
        &file,
        "out",
        &["--workers", "2", "--control", "gold", "--control", "empty"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = common::run(
        critic()
            .args(["experiment", "report", "--format", "markdown"])
            .arg(lab.path("out")),
    );
    assert!(md.status.success(), "{}", stderr(&md));
    let md = String::from_utf8(md.stdout).unwrap();
    // fix-only resolves textutil and bounds; brt-only resolves nothing but
    // two of its three tests are F->P.
    assert!(
        md.contains("| fix-only | 3 | 66.7% [20.8, 93.9] (2/3) | – |"),
        "{md}"
    );
    assert!(
        md.contains("| brt-only | 3 | 0.0% [0.0, 56.1] (0/3) | 66.7% [20.8, 93.9] (2/3) |"),
        "{md}"
    );
    assert!(
        md.contains("| brt-only | fix-only | 3 | 2 | 0 | -66.7 pp | 0.5000 |"),
        "{md}"
    );
    // The controls: the golden patch resolves every instance, no change none.
    assert!(
        md.contains("| @empty | 3 | 0.0% [0.0, 56.1] (0/3) |"),
        "{md}"
    );
    assert!(
        md.contains("| @gold | 3 | 100.0% [43.9, 100.0] (3/3) |"),
        "{md}"
    );
    assert_eq!(jsonl(&lab.path("out/predictions.jsonl")).len(), 12);
    let by_brt = common::run(
        critic()
            .args([
                "experiment",
                "report",
                "--format",
                "markdown",
                "--baseline",
                "brt-only",
            ])
            .arg(lab.path("out")),
    );
    assert!(String::from_utf8_lossy(&by_brt.stdout)
        .contains("| fix-only | brt-only | 3 | 0 | 2 | +66.7 pp |"));
    let bad = common::run(
        critic()
            .args(["experiment", "report", "--baseline", "nope"])
            .arg(lab.path("out")),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("--baseline nope: no such arm (arms: fix-only, brt-only)"),
        "{}",
        stderr(&bad)
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(lab.path("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["arms"][0]["resolved"]["k"], 2);

    report_opens_and_leads_to_every_run(&lab.path("out"));
}

/// The path a `file://` link names, and its fragment.
fn linked_file(href: &str) -> (PathBuf, Option<String>) {
    let rest = href
        .strip_prefix("file://")
        .unwrap_or_else(|| panic!("{href}: a link off the output directory"));
    let (path, fragment) = match rest.split_once('#') {
        Some((p, f)) => (p, Some(f.to_string())),
        None => (rest, None),
    };
    (PathBuf::from(path), fragment)
}

/// `out`'s report in a real Chromium 1400 px wide: no errors, nothing wider
/// than the window, type a person reads, the controls out of the rounds
/// chart, and a grid whose every cell opens its run's page, which holds
/// what the run's files hold.
fn report_opens_and_leads_to_every_run(out: &Path) {
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for fetch in ["src=\"http", "href=\"http", "@import", "<script", "url("] {
        assert!(!html.contains(fetch), "the report has {fetch}");
    }
    let chromium = browser::Chromium::start(1400, 1000);
    let page = chromium.open(&out.join("report.html"));
    assert_eq!(page.errors(), Vec::<String>::new());
    let (width, window) = page.overflow();
    assert!(
        width <= window,
        "the page is {width} px wide in a {window} px window"
    );
    let sizes = page.eval(
        "['body', '#arms td', '#runs td', '#rounds figcaption', 'p'].map(s => \
         parseFloat(getComputedStyle(document.querySelector(s)).fontSize))",
    );
    for size in sizes.as_array().unwrap() {
        assert!(size.as_f64().unwrap() >= 15.0, "type of {size} px: {sizes}");
    }
    // The charts' words as drawn, at the size the page shows them.
    let chart_type = page.eval(
        "Math.min(...Array.from(document.querySelectorAll('svg text')) \
         .filter(t => t.textContent.trim()).map(t => t.getBoundingClientRect().height))",
    );
    assert!(
        chart_type.as_f64().unwrap() >= 14.0,
        "chart text {chart_type} px high"
    );
    // Resolved, F→P, rounds, and the critic's accuracy per round (two).
    assert_eq!(
        page.eval("document.querySelectorAll('figure svg').length"),
        5
    );
    assert_eq!(
        page.eval(
            "document.querySelectorAll('#rejected-resolving svg, #accepted-unresolved svg').length"
        ),
        2
    );
    // What each arm is: its skill, budget and role, as the page shows them.
    let defs = page.eval(
        "Array.from(document.querySelectorAll('#arm-defs tr'), r => Array.from(r.cells, c => c.textContent)).slice(1)",
    );
    let defs = defs.as_array().unwrap();
    let row = |arm: &str| {
        defs.iter()
            .find(|r| r[0] == arm)
            .unwrap_or_else(|| panic!("{arm}: {defs:?}"))
    };
    assert!(
        row("fix-only")[1]
            .as_str()
            .unwrap()
            .starts_with("fix-only 0.1.0"),
        "{defs:?}"
    );
    assert_eq!(row("brt-only")[2], "1", "max_iterations as the arm set it");
    assert!(
        row("brt-only")[3]
            .as_str()
            .unwrap()
            .contains("brt-only (hard gate)"),
        "{defs:?}"
    );
    assert!(
        row("brt-only")[6]
            .as_str()
            .unwrap()
            .starts_with("writes tests only"),
        "{defs:?}"
    );
    assert!(
        row("fix-only")[6].as_str().unwrap().starts_with("fixes"),
        "{defs:?}"
    );
    // Each count of the main table links to exactly the runs it counts.
    let linked = page.eval(
        "Array.from(document.querySelectorAll('#arms td:nth-child(-n+7) a'), a => [a.textContent, \
         document.querySelectorAll(a.getAttribute('href') + ' a').length])",
    );
    let linked = linked.as_array().unwrap();
    assert!(linked.len() >= 12, "{linked:?}");
    // (Every number links; a count's list holds exactly its runs.)
    assert_eq!(
        page.eval("document.querySelectorAll('#arms tr:nth-child(2) a').length"),
        11
    );
    for pair in linked {
        let text = pair[0].as_str().unwrap();
        let counted: Option<u64> = match text.rsplit_once('(') {
            Some((_, k)) => k.split('/').next().unwrap().parse().ok(),
            None => text.parse().ok(),
        };
        if let Some(counted) = counted {
            assert_eq!(pair[1].as_u64().unwrap(), counted, "{text}: {linked:?}");
        }
    }
    // Every number of the page that links to a list (the paired table,
    // the charts, the critic's accuracy, failures) names as many runs as
    // its list holds; a pair's item links both of its runs.
    let numbers = page.eval(
        "Array.from(document.querySelectorAll('a[href^=\"#\"]'), a => { \
         const t = document.getElementById(a.getAttribute('href').slice(1)); \
         return [a.textContent, t ? t.id : null, t && t.classList.contains('behind') \
         ? t.querySelectorAll('a').length : null]; })",
    );
    let mut checked = 0;
    for n in numbers.as_array().unwrap() {
        let (Some(count), Some(id), Some(links)) = (
            n[0].as_str().and_then(|t| t.parse::<u64>().ok()),
            n[1].as_str(),
            n[2].as_u64(),
        ) else {
            continue;
        };
        let per_item = if id.starts_with("paired-") { 2 } else { 1 };
        assert_eq!(links, count * per_item, "{n}");
        checked += 1;
    }
    assert!(checked >= 30, "{numbers}");
    // The paired table: every number links to the pairs behind it.
    assert_eq!(
        page.eval("Array.from(document.querySelectorAll('#paired tr:nth-child(2) td'), c => c.querySelector('a') !== null)"),
        json!([false, false, true, true, true, true, true])
    );
    // The charts say where their numbers come from.
    assert_eq!(
        page.eval("document.querySelector('#resolved .from').textContent"),
        "Behind the bars: fix-only: 2 of 3; brt-only: 0 of 3; @empty: 0 of 3; @gold: 3 of 3."
    );
    assert_eq!(
        page.eval("document.querySelector('#rounds .from').textContent"),
        "From the results of fix-only, brt-only."
    );
    assert_eq!(
        page.eval("document.querySelector('#rounds figcaption').textContent"),
        "fix-only brt-only",
        "the rounds chart holds the arms with an agent, not the controls"
    );
    // Every anchor on the page is there.
    let anchors = page.eval(
        "Array.from(document.querySelectorAll('a[href^=\"#\"]'), \
         a => document.getElementById(a.getAttribute('href').slice(1)) !== null)",
    );
    assert!(
        anchors.as_array().unwrap().iter().all(|a| a == true),
        "{anchors}"
    );
    // The grid: one chip per run, its class the run's outcome.
    let chips = page
        .eval("Array.from(document.querySelectorAll('#runs a.run'), a => [a.className, a.href])");
    let chips = chips.as_array().unwrap();
    let results = jsonl(&out.join("results.jsonl"));
    assert_eq!(chips.len(), results.len(), "one chip per run");
    for r in &results {
        let dir = pluggable_critic::experiment::run_dir(
            out,
            &pluggable_critic::experiment::db::RunKey {
                instance_id: r["instance_id"].as_str().unwrap().into(),
                arm: r["arm"].as_str().unwrap().into(),
                sample: r["sample"].as_u64().unwrap() as u32,
            },
        );
        let href = format!("file://{}", dir.join("run.html").display());
        let chip = chips
            .iter()
            .find(|c| c[1] == href.as_str())
            .unwrap_or_else(|| panic!("no chip opens {href}"));
        let class = match (r["status"].as_str().unwrap(), r["resolved"].as_bool()) {
            ("ok", Some(true)) => "run resolved",
            ("ok", _) => "run unresolved",
            ("agent_fail", _) => "run agent-fail",
            _ => "run infra-error",
        };
        assert_eq!(chip[0], class, "{href}");
        run_page_shows_its_files(&chromium, &dir);
    }
}

/// A run's page against the run's own files.
fn run_page_shows_its_files(chromium: &browser::Chromium, dir: &Path) {
    let page = chromium.open(&dir.join("run.html"));
    assert_eq!(page.errors(), Vec::<String>::new(), "{}", dir.display());
    let (width, window) = page.overflow();
    assert!(width <= window, "{}: {width} px wide", dir.display());
    for href in page.links() {
        let (file, fragment) = linked_file(&href);
        assert!(
            file.is_file(),
            "{}: a link to {href}, which is not there",
            dir.display()
        );
        if let Some(f) = fragment {
            let target = std::fs::read_to_string(&file).unwrap();
            assert!(target.contains(&format!("id=\"{f}\"")), "{href}: no #{f}");
        }
    }
    let text = |selector: &str| {
        page.eval(&format!(
            "document.querySelector('{selector}')?.textContent ?? null"
        ))
    };
    // The arm it ran, by its skill; the status and the grade apart.
    let arm = dir.parent().unwrap().file_name().unwrap().to_string_lossy();
    // (A control's directory is its name escaped: `_gold~<hash>`.)
    if !arm.contains('~') {
        let facts = page.eval(
            "Array.from(document.querySelectorAll('.facts tr'), r => r.textContent).join('\\n')",
        );
        assert!(
            facts
                .as_str()
                .unwrap()
                .contains(&format!("arm{arm}: skill {arm} 0.1.0")),
            "{facts}"
        );
    }
    // Each round: the verdict, the follow-up the agent got, the patch judged.
    if let Ok(record) = std::fs::read(dir.join("run.json")) {
        let record: Value = serde_json::from_slice(&record).unwrap();
        for round in record["rounds"].as_array().unwrap() {
            let k = round["round"].as_u64().unwrap();
            let verdict = text(&format!("#round-{k} h2 .chip"));
            assert_eq!(verdict, round["verdict"], "{}: round {k}", dir.display());
            assert_eq!(
                text(&format!("#round-{k} pre.text")),
                round["followup"],
                "{}: round {k}'s follow-up",
                dir.display()
            );
            let patch = std::fs::read_to_string(dir.join(format!("round-{k}/patch.diff")));
            match patch {
                Ok(patch) if patch.trim().is_empty() => {
                    let said = text(&format!("#round-{k} .empty-patch"));
                    assert!(said.as_str().unwrap().starts_with("Empty"), "{said}");
                }
                Ok(patch) => {
                    let shown = text(&format!("#round-{k} pre.diff"));
                    assert_eq!(shown.as_str().unwrap().trim_end(), patch.trim_end());
                }
                Err(_) => {}
            }
        }
    }
    // The grading, id by id, as golden.json has it.
    let golden: Value =
        serde_json::from_slice(&std::fs::read(dir.join("grade/golden.json")).unwrap()).unwrap();
    let rows = page.eval(
        "Array.from(document.querySelectorAll('#ids tr'), r => Array.from(r.cells, c => c.textContent)).slice(1)",
    );
    let ids = golden["grade"]["ids"].as_array().unwrap();
    assert_eq!(
        rows.as_array().unwrap().len(),
        ids.len(),
        "{}",
        dir.display()
    );
    for (row, id) in rows.as_array().unwrap().iter().zip(ids) {
        assert_eq!(row[0], id["list"]);
        assert!(row[1]
            .as_str()
            .unwrap()
            .starts_with(id["id"].as_str().unwrap()));
        assert_eq!(row[2], id["status"]);
        assert_eq!(row[4], if id["success"] == true { "✓" } else { "✗" });
    }
}

#[test]
fn the_demo_experiment_runs_offline_and_opens_with_the_report_table() {
    let venv_bin = python().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(venv_bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let kept = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let example = kept.path().join("example");
    let out = common::run(
        critic()
            .args(["demo", "experiment", "--keep"])
            .arg(&example)
            .env("PATH", &path),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("## demo\n\n| arm | runs | resolved (95% CI) |"),
        "{text}"
    );
    assert!(
        text.contains("| fix-only | 2 | 100.0% [34.2, 100.0] (2/2) |"),
        "{text}"
    );
    assert!(
        text.contains("| brt-only | 2 | 0.0% [0.0, 65.8] (0/2) | 100.0% [34.2, 100.0] (2/2) |"),
        "{text}"
    );
    assert!(text.contains("| @gold | 2 | 100.0%"), "{text}");
    let report = text
        .lines()
        .find_map(|l| l.strip_prefix("Report: "))
        .expect("the report's path");
    assert!(Path::new(report).is_file());
    assert!(
        report.starts_with(&example.display().to_string()),
        "{report}"
    );
    // The kept example is a whole experiment: edited and run again, it runs.
    let file = example.join("experiment/experiment.yaml");
    assert!(
        text.contains(&format!("critic experiment run {}", file.display())),
        "{text}"
    );
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert!(yaml.contains("budget: {turns: 4}"), "{yaml}");
    std::fs::write(
        &file,
        yaml.replace("budget: {turns: 4}", "budget: {turns: 4}\nsamples: 2"),
    )
    .unwrap();
    let again = common::run(
        critic()
            .args(["experiment", "run"])
            .arg(&file)
            .arg("--output-dir")
            .arg(example.join("out2"))
            .env("PATH", &path),
    );
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(stderr(&again).contains("report.html"), "{}", stderr(&again));
    let results = std::fs::read_to_string(example.join("out2/results.jsonl")).unwrap();
    assert_eq!(
        results.lines().count(),
        8,
        "two samples of two arms on two packages"
    );
    // With two samples the report draws pass@k: a point per arm and k.
    let chromium = browser::Chromium::start(1400, 1000);
    let page = chromium.open(&example.join("out2/report.html"));
    assert_eq!(page.errors(), Vec::<String>::new());
    assert_eq!(
        page.eval("document.querySelector('#pass-at-k figcaption').textContent"),
        "fix-only brt-only"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#pass-at-k svg circle').length"),
        4
    );
    // And it is kept only where asked: an example directory in use is refused.
    let refused = common::run(
        critic()
            .args(["demo", "experiment", "--keep"])
            .arg(&example)
            .env("PATH", &path),
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("not empty"),
        "{}",
        stderr(&refused)
    );
}
