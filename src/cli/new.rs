//! `critic new`: a new skill that builds, validates and passes its own test as
//! generated. The templates live in `templates/new-skill/`.

use crate::cli::common::EXIT_ACCEPT;
use anyhow::{anyhow, Result};
use std::path::{Path, PathBuf};

const MANIFEST: &str = include_str!("../../templates/new-skill/critic.yaml.tmpl");
const README: &str = include_str!("../../templates/new-skill/README.md.tmpl");
const CARGO: &str = include_str!("../../templates/new-skill/Cargo.toml.tmpl");
const LIB: &str = include_str!("../../templates/new-skill/lib.rs.tmpl");
const PY_README: &str = include_str!("../../templates/new-skill-python/README.md.tmpl");
const PY_PROJECT: &str = include_str!("../../templates/new-skill-python/pyproject.toml.tmpl");
const PY_APP: &str = include_str!("../../templates/new-skill-python/app.py.tmpl");
const PY_TEST: &str = include_str!("../../templates/new-skill-python/test_app.py.tmpl");

/// The language of a new skill's detector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Rust crate built with cargo.
    Rust,
    /// A Python module built with componentize-py.
    Python,
}

/// The SDK of `lang` this binary was built with: for Rust, its copy of the
/// `critic-sdk` crate in critic's cache (see
/// [`crate::skill::bundled_sdk`]); for Python, the
/// `critic-sdk-py` package of the checkout it was built from, when that is
/// still there.
pub fn bundled_sdk(lang: Lang) -> Result<PathBuf> {
    let (dir, marker) = match lang {
        Lang::Rust => return crate::skill::bundled_sdk::rust().map_err(|e| anyhow!(e)),
        Lang::Python => ("critic-sdk-py", "pyproject.toml"),
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    if path.join(marker).is_file() {
        Ok(path)
    } else {
        Err(anyhow!(
            "the {dir} this binary was built from ({}) is gone; pass --sdk <path to {dir}>",
            path.display()
        ))
    }
}

/// Whether `name` is a valid skill name (the manifest schema's pattern).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Create `parent/name/` with a manifest, README and a detector in `lang`
/// (a crate, or a Python module with its native test).
pub fn create(parent: &Path, name: &str, lang: Lang, sdk: &Path) -> Result<PathBuf> {
    if !valid_name(name) {
        return Err(anyhow!(
            "{name:?} is not a valid skill name: use lowercase letters, digits, '-' and '_', starting with a letter or digit"
        ));
    }
    let dir = parent.join(name);
    if dir.exists() {
        return Err(anyhow!(
            "{} already exists; pick another name or remove it",
            dir.display()
        ));
    }
    let sdk = sdk
        .canonicalize()
        .map_err(|e| anyhow!("--sdk {}: {e}", sdk.display()))?;
    let crate_name = name.replace('-', "_");
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{crate}}", &crate_name)
            .replace("{{sdk}}", &sdk.display().to_string())
            .replace(
                "{{componentize_py}}",
                crate::skill::compile_python::COMPONENTIZE_PY_VERSION,
            )
    };
    let files = match lang {
        Lang::Rust => vec![
            ("critic.yaml", fill(MANIFEST)),
            ("README.md", fill(README)),
            ("detector/Cargo.toml", fill(CARGO)),
            ("detector/src/lib.rs", fill(LIB)),
            (".gitignore", "detector/target/\n".to_string()),
        ],
        Lang::Python => vec![
            ("critic.yaml", fill(MANIFEST)),
            ("README.md", fill(PY_README)),
            ("detector/pyproject.toml", fill(PY_PROJECT)),
            ("detector/app.py", fill(PY_APP)),
            ("detector/test_app.py", fill(PY_TEST)),
            (".gitignore", ".venv/\n__pycache__/\n".to_string()),
        ],
    };
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| anyhow!("{}: {e}", p.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_manifest_pattern() {
        assert!(valid_name("my-critic"));
        assert!(valid_name("c2"));
        assert!(!valid_name("My"));
        assert!(!valid_name("-x"));
        assert!(!valid_name(""));
    }

    #[test]
    fn refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("taken")).unwrap();
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR"));
        let e = create(dir.path(), "taken", Lang::Python, sdk).unwrap_err();
        assert!(e.to_string().contains("already exists"));
    }
}

/// `critic new`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Skill name (lowercase, digits, '-').
    name: String,
    /// Parent directory for the new skill.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The detector's language.
    #[arg(long, value_enum, default_value = "rust")]
    lang: Lang,
    /// Path to the SDK: the critic-sdk crate, or the critic-sdk-py package
    /// with --lang python (default: the one this binary was built from).
    #[arg(long)]
    sdk: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<u8> {
    let sdk = match args.sdk {
        Some(p) => p,
        None => bundled_sdk(args.lang)?,
    };
    let created = create(&args.dir, &args.name, args.lang, &sdk)?;
    println!("created skill {} in {}", args.name, created.display());
    match args.lang {
        Lang::Rust => println!(
            "next: critic build {0} && critic validate {0}",
            created.display()
        ),
        Lang::Python => println!(
            "next: see {}/README.md to set up its environment, then critic build {0} && critic validate {0}",
            created.display()
        ),
    }
    Ok(EXIT_ACCEPT)
}
