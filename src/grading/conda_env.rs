//! A conda `environment.yml` as pip requirements: SWE-bench builds the
//! environments of some repositories (xarray, matplotlib 3.5 and later)
//! with `conda env update -f environment.yml`, then its `pip_packages`;
//! here, without conda, the file's conda packages become requirements of
//! the same names and versions, resolved from PyPI with the file's own
//! `pip:` section.
//!
//! The equivalent is documented, not exact: a conda package that is no
//! Python package (a compiler, a C library such as `hdf5`, a program such
//! as `graphviz`) or has no PyPI release (`cdms2`) is left out, and said
//! so; one PyPI knows by another name (`dask-core`, `matplotlib-base`,
//! `iris`) is renamed. A package whose name PyPI does not know at all is
//! left out when it is resolved (see `environment.rs`).

use crate::skill::yaml;

/// Conda packages PyPI has under another name.
const RENAMED: &[(&str, &str)] = &[
    ("dask-core", "dask"),
    ("matplotlib-base", "matplotlib"),
    // PyPI's `iris` is an unrelated package.
    ("iris", "scitools-iris"),
    ("pytables", "tables"),
    ("pytorch", "torch"),
    ("python-graphviz", "graphviz"),
    ("msgpack-python", "msgpack"),
    ("pyqt", "PyQt5"),
];

/// Conda packages with no pip equivalent here: the interpreter and pip
/// themselves, compilers and build tools, C libraries and programs (PyPI's
/// `graphviz` is the Python binding, not the program), toolkits whose
/// Python binding only builds against system libraries (`pygobject`,
/// `wxpython`: hours of compiling), and packages conda-forge alone has.
const CONDA_ONLY: &[&str] = &[
    "python",
    "pip",
    "c-compiler",
    "cxx-compiler",
    "fortran-compiler",
    "compilers",
    "pkg-config",
    "make",
    "ccache",
    "git",
    "nodejs",
    "hdf5",
    "libnetcdf",
    "netcdf-c",
    "eccodes",
    "libgdal",
    "gdal",
    "proj",
    "geos",
    "esmf",
    "esmpy",
    "cdms2",
    "graphviz",
    "cairo",
    "gtk3",
    "gtk4",
    "pygobject",
    "wxpython",
    "tk",
    "qt",
    "ffmpeg",
    "imagemagick",
    "inkscape",
    "ghostscript",
    "texlive-core",
    "freetype",
    "libpng",
    "zlib",
    "openblas",
    "libblas",
    "mkl",
];

/// An environment file's packages as pip requirements.
#[derive(Debug, Default, PartialEq)]
pub struct AsPip {
    /// Its conda packages, as pip requirements, then its `pip:` section.
    pub requirements: Vec<String>,
    /// What was left out, and why.
    pub left_out: Vec<String>,
}

/// The requirements of `text`, an `environment.yml`, each line of its
/// `pip:` section through `rename` (SWE-bench's package renames); `file`
/// names it in an error.
pub fn requirements(
    text: &str,
    file: &str,
    rename: impl Fn(&str) -> String,
) -> Result<AsPip, String> {
    let doc = yaml::parse(text).map_err(|e| {
        format!(
            "{file}:{}:{}: {}",
            e.position.line, e.position.column, e.message
        )
    })?;
    let deps = doc.value.get("dependencies").ok_or_else(|| {
        format!("{file}: no `dependencies` list, which conda's environment files have")
    })?;
    let deps = deps.as_array().ok_or_else(|| {
        let at = doc.position("/dependencies");
        format!(
            "{file}:{}:{}: `dependencies` is not a list",
            at.line, at.column
        )
    })?;
    let mut out = AsPip::default();
    let mut pip = Vec::new();
    for (i, dep) in deps.iter().enumerate() {
        match dep {
            serde_json::Value::String(spec) => match requirement(spec) {
                Ok(r) => out.requirements.push(r),
                Err(why) => out.left_out.push(format!("{spec}: {why}")),
            },
            serde_json::Value::Object(section) if section.contains_key("pip") => {
                let lines = section["pip"].as_array().cloned().unwrap_or_default();
                pip.extend(lines.iter().filter_map(|l| l.as_str()).map(&rename));
            }
            other => {
                let at = doc.position(&format!("/dependencies/{i}"));
                return Err(format!(
                    "{file}:{}:{}: a dependency is a package or a `pip:` list, not {other}",
                    at.line, at.column
                ));
            }
        }
    }
    out.requirements
        .extend(pip.into_iter().filter(|l| !l.is_empty()));
    Ok(out)
}

/// The pip requirement of one conda match spec (`numpy`, `numpy=1.23`,
/// `numpy>=1.20,<2`, `numpy=1.23=py310h...`, `conda-forge::numpy`,
/// `numpy 1.23`); `Err`: why it has none.
fn requirement(spec: &str) -> Result<String, &'static str> {
    let spec = spec.trim();
    let spec = spec.rsplit_once("::").map_or(spec, |(_, s)| s);
    // Brackets hold a build's keys or pip-style extras: neither counts.
    let unbracketed = match (spec.find('['), spec.find(']')) {
        (Some(open), Some(close)) if open < close => {
            format!("{}{}", &spec[..open], &spec[close + 1..])
        }
        _ => spec.to_string(),
    };
    let spec = unbracketed.trim();
    let end = spec
        .find(|c: char| "=<>!~ ".contains(c))
        .unwrap_or(spec.len());
    let (name, constraint) = spec.split_at(end);
    let name = name.to_ascii_lowercase();
    if name.is_empty() {
        return Err("not a package");
    }
    if CONDA_ONLY.contains(&name.as_str()) {
        return Err("no pip equivalent (conda only)");
    }
    let name = RENAMED
        .iter()
        .find(|(conda, _)| *conda == name)
        .map_or(name.clone(), |(_, pypi)| pypi.to_string());
    // `numpy 1.23` is `numpy=1.23`.
    let spaced = constraint.starts_with(' ');
    let constraint = constraint.trim();
    if constraint.is_empty() {
        return Ok(name);
    }
    let equals;
    let constraint = if spaced && constraint.starts_with(|c: char| c.is_ascii_digit()) {
        equals = format!("={constraint}");
        equals.as_str()
    } else {
        constraint
    };
    if constraint.contains('|') {
        // pip has no "or": any version, as conda could have picked either.
        return Ok(name);
    }
    let version = |v: &str| -> String {
        let v = v.trim();
        match v.strip_suffix('*') {
            Some(stem) => format!("=={}*", stem.trim_end_matches('.').to_string() + "."),
            None => format!("=={v}"),
        }
    };
    // `=1.2` is conda's "1.2, any patch"; `=1.2=build` pins a build of 1.2.
    if let Some(rest) = constraint.strip_prefix('=').filter(|r| !r.starts_with('=')) {
        return Ok(match rest.split_once('=') {
            Some((v, _build)) => format!("{name}=={}", v.trim()),
            None if rest.contains('*') => format!("{name}{}", version(rest)),
            None => format!("{name}=={}.*", rest.trim()),
        });
    }
    let constraint = match constraint.strip_prefix("==") {
        Some(v) => version(v.split_once('=').map_or(v, |(v, _)| v)),
        None => constraint.replace(' ', ""),
    };
    Ok(format!("{name}{constraint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of SWE-bench's renames, as `swebench_specs::replaced` makes it
    /// (its own tests hold the whole table).
    fn renamed(line: &str) -> String {
        if line.starts_with("types-pkg_resources") {
            "types-setuptools".into()
        } else {
            line.to_string()
        }
    }

    #[test]
    fn conda_specs_become_pip_requirements() {
        for (conda, pip) in [
            ("numpy", "numpy"),
            ("numpy=1.23", "numpy==1.23.*"),
            ("numpy=1.23.*", "numpy==1.23.*"),
            ("numpy==1.23.0", "numpy==1.23.0"),
            ("numpy=1.23.0=py310h5f9d8c6_0", "numpy==1.23.0"),
            ("numpy>=1.20,<2", "numpy>=1.20,<2"),
            ("numpy >=1.20", "numpy>=1.20"),
            ("conda-forge::numpy=1.23", "numpy==1.23.*"),
            ("numpy 1.23", "numpy==1.23.*"),
            ("sphinx>=3.0.0,!=6.1.2", "sphinx>=3.0.0,!=6.1.2"),
            ("pandas-stubs<=2.2.3.241126", "pandas-stubs<=2.2.3.241126"),
            ("dask-core", "dask"),
            ("matplotlib-base>=3.5", "matplotlib>=3.5"),
            ("iris", "scitools-iris"),
            ("nbconvert[execute]!=6.0.0", "nbconvert!=6.0.0"),
            ("python-dateutil>=2.1", "python-dateutil>=2.1"),
            ("Pillow>=9", "pillow>=9"),
            ("libfoo 1.0|1.1", "libfoo"),
        ] {
            assert_eq!(requirement(conda).as_deref(), Ok(pip), "{conda}");
        }
        for conda in [
            "python=3.10",
            "pip",
            "hdf5",
            "c-compiler",
            "graphviz",
            "wxpython",
        ] {
            assert!(requirement(conda).is_err(), "{conda}");
        }
    }

    #[test]
    fn an_environment_file_gives_its_packages_and_its_pip_section() {
        let text = "name: xarray-tests\nchannels:\n  - conda-forge\ndependencies:\n  - dask-core\n  - hdf5\n  - lxml    # a comment\n  - numpy=1.23\n  - python=3.10\n  - pip\n  - pip:\n    - numbagg\n    - types-pkg_resources==0.1\n";
        let got = requirements(text, "environment.yml", renamed).unwrap();
        assert_eq!(
            got.requirements,
            [
                "dask",
                "lxml",
                "numpy==1.23.*",
                "numbagg",
                "types-setuptools"
            ]
        );
        assert_eq!(got.left_out.len(), 3, "{:?}", got.left_out);
        assert!(got.left_out[0].starts_with("hdf5: no pip equivalent"));
    }

    #[test]
    fn a_bad_environment_file_is_an_error_naming_the_place() {
        let e =
            requirements("name: x\ndependencies: 3\n", "ci/environment.yml", renamed).unwrap_err();
        assert!(e.starts_with("ci/environment.yml:2:"), "{e}");
        let e = requirements("name: x\ndependencies:\n  - [a]\n", "env.yml", renamed).unwrap_err();
        assert!(e.starts_with("env.yml:3:"), "{e}");
        let e = requirements("name: x\n", "env.yml", renamed).unwrap_err();
        assert!(e.contains("no `dependencies`"), "{e}");
        assert!(requirements("a: [", "env.yml", renamed)
            .unwrap_err()
            .starts_with("env.yml:"));
    }
}
