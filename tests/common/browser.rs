//! A real headless Chromium (the system's `chromium`), driven over its
//! DevTools protocol: a page opened at a given window size, every error it
//! reported (script exceptions, console errors, resources that failed to
//! load), and what a script finds on it.
//! Included by path by the tests and benchmarks that look at reports.

use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A browser with a window of a fixed size.
pub struct Chromium {
    browser: Browser,
}

/// A page once loaded.
pub struct Opened {
    tab: Arc<Tab>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Chromium {
    /// Chromium with a `width` × `height` window and a profile of its own.
    pub fn start(width: u32, height: u32) -> Chromium {
        let options = LaunchOptions::default_builder()
            .path(Some("/usr/bin/chromium".into()))
            .sandbox(false)
            .window_size(Some((width, height)))
            .idle_browser_timeout(Duration::from_secs(300))
            .args(vec![
                std::ffi::OsStr::new("--disable-gpu"),
                std::ffi::OsStr::new("--disable-background-networking"),
            ])
            .build()
            .expect("launch options");
        let browser = Browser::new(options)
            .expect("chromium (apt-get install chromium; .ci/run installs it)");
        Chromium { browser }
    }

    /// `file` opened in a new tab and loaded, its errors collected from the
    /// first request on.
    pub fn open(&self, file: &Path) -> Opened {
        let tab = self.browser.new_tab().expect("a tab");
        tab.set_default_timeout(Duration::from_secs(60));
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        tab.enable_runtime().expect("Runtime domain");
        tab.enable_log().expect("Log domain");
        let seen = Arc::clone(&errors);
        tab.add_event_listener(Arc::new(move |event: &Event| {
            let error = match event {
                Event::RuntimeExceptionThrown(e) => Some(format!(
                    "exception: {}",
                    e.params
                        .exception_details
                        .exception
                        .as_ref()
                        .and_then(|x| x.description.clone())
                        .unwrap_or_else(|| e.params.exception_details.text.clone())
                )),
                Event::LogEntryAdded(e) => {
                    let level = format!("{:?}", e.params.entry.level);
                    (level == "Error").then(|| {
                        format!(
                            "log: {} ({})",
                            e.params.entry.text,
                            e.params.entry.url.clone().unwrap_or_default()
                        )
                    })
                }
                Event::RuntimeConsoleAPICalled(e) => {
                    let kind = format!("{:?}", e.params.Type);
                    (kind == "Error").then(|| format!("console.error: {:?}", e.params.args))
                }
                _ => None,
            };
            if let Some(error) = error {
                seen.lock().unwrap().push(error);
            }
        }))
        .expect("an event listener");
        let url = format!("file://{}", file.display());
        tab.navigate_to(&url)
            .and_then(|t| t.wait_until_navigated())
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        Opened { tab, errors }
    }
}

impl Opened {
    /// What `expression` evaluates to on the page, as JSON.
    pub fn eval(&self, expression: &str) -> Value {
        let wrapped = format!("JSON.stringify({expression})");
        let result = self
            .tab
            .evaluate(&wrapped, false)
            .unwrap_or_else(|e| panic!("{expression}: {e}"));
        let text = result
            .value
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{expression}: no value ({result:?})"));
        serde_json::from_str(text).unwrap()
    }

    /// Every error the page reported so far.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().unwrap().clone()
    }

    /// How wide the page's content is, against the window: wider means
    /// the reader scrolls the whole page sideways.
    pub fn overflow(&self) -> (u64, u64) {
        let v = self.eval("[document.documentElement.scrollWidth, window.innerWidth]");
        (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
    }

    /// Every link's target as the page resolves it.
    pub fn links(&self) -> Vec<String> {
        let v = self.eval("Array.from(document.querySelectorAll('a[href]'), a => a.href)");
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        let _ = self.tab.close(false);
    }
}
