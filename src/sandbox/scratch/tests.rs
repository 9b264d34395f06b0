//! Unit tests of `scratch`.

use super::execute::{capture, python_path};
use super::*;

#[test]
fn paths_must_stay_inside_the_copy() {
    assert!(relative("a/b.py").is_ok());
    assert!(relative("./a.py").is_ok());
    for bad in ["", "/etc/passwd", "../x", "a/../../x"] {
        assert!(relative(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_copy_comes_first_on_pythons_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(python_path(d, None), d.display().to_string());
    std::fs::create_dir(d.join("src")).unwrap();
    let given = "{scratch}/lib".to_string();
    assert_eq!(
        python_path(d, Some(&given)),
        format!("{0}/lib:{0}:{0}/src", d.display())
    );
}

/// Overwrite `file` in place with text of the same length, through a
/// hard link elsewhere in `dir`, and put its times back.
fn forge(dir: &Path, file: &Path) {
    let meta = std::fs::metadata(file).unwrap();
    std::fs::create_dir(dir.join("d")).unwrap();
    std::fs::hard_link(file, dir.join("d/h")).unwrap();
    std::fs::write(dir.join("d/h"), b"BAD\n").unwrap();
    std::fs::remove_dir_all(dir.join("d")).unwrap();
    let times = std::fs::FileTimes::new()
        .set_accessed(meta.accessed().unwrap())
        .set_modified(meta.modified().unwrap());
    std::fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_times(times)
        .unwrap();
}

#[test]
fn reset_restores_forged_files_with_and_without_the_watch() {
    for watched in [true, false] {
        let root = tempfile::tempdir().unwrap();
        let (dir, tmp) = (root.path().join("slot"), root.path().join("tmp"));
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        let file = dir.join("pkg/a.py");
        std::fs::write(&file, b"good\n").unwrap();
        let stamps = stamp_tree(&dir).unwrap();
        let watch = if watched {
            Some(Watch::new(&dir, &stamps).expect("inotify"))
        } else {
            None
        };
        let mut slot = Slot {
            dir: dir.clone(),
            tmp,
            watch,
            stamps,
        };
        let base: Blob = std::sync::Arc::new(b"good\n".to_vec());
        for round in 0..2 {
            forge(&dir, &file);
            assert_eq!(std::fs::read(&file).unwrap(), b"BAD\n");
            reset(&mut slot, &|_| Ok(base.clone())).unwrap();
            assert_eq!(
                std::fs::read(&file).unwrap(),
                b"good\n",
                "watched: {watched}, round {round}"
            );
            assert!(!dir.join("d").exists());
        }
    }
}

#[test]
fn reset_restores_directories_and_the_root() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    /// What a run does to the copy (`dir`), with its tmp at hand.
    type Attack<'a> = (&'a str, &'a dyn Fn(&Path, &Path));
    let attacks: [Attack; 3] = [
        ("a directory's mode", &|dir, _| {
            std::fs::set_permissions(dir.join("pkg"), PermissionsExt::from_mode(0o500)).unwrap();
        }),
        ("the root's times and mode", &|dir, _| {
            std::fs::File::open(dir)
                .unwrap()
                .set_modified(SystemTime::UNIX_EPOCH)
                .unwrap();
            std::fs::set_permissions(dir, PermissionsExt::from_mode(0o555)).unwrap();
        }),
        (
            "a directory swapped for a symlink to a look-alike",
            &|dir, tmp| {
                std::fs::create_dir(tmp.join("fake")).unwrap();
                std::fs::write(tmp.join("fake/a.py"), b"BAD\n").unwrap();
                std::fs::remove_dir_all(dir.join("pkg")).unwrap();
                std::os::unix::fs::symlink(tmp.join("fake"), dir.join("pkg")).unwrap();
            },
        ),
    ];
    for watched in [true, false] {
        for (what, attack) in &attacks {
            let root = tempfile::tempdir().unwrap();
            let (dir, tmp) = (root.path().join("slot"), root.path().join("tmp"));
            std::fs::create_dir_all(dir.join("pkg")).unwrap();
            std::fs::create_dir(&tmp).unwrap();
            std::fs::write(dir.join("pkg/a.py"), b"good\n").unwrap();
            let (dir_mode, pkg_mode) = (mode(&dir), mode(&dir.join("pkg")));
            let stamps = stamp_tree(&dir).unwrap();
            let watch = watched.then(|| Watch::new(&dir, &stamps).expect("inotify"));
            let mut slot = Slot {
                dir: dir.clone(),
                tmp: tmp.clone(),
                watch,
                stamps,
            };
            attack(&dir, &tmp);
            let base: Blob = std::sync::Arc::new(b"good\n".to_vec());
            reset(&mut slot, &|_| Ok(base.clone())).unwrap();
            let context = format!("{what}, watched: {watched}");
            assert_eq!(mode(&dir), dir_mode, "{context}");
            assert_eq!(mode(&dir.join("pkg")), pkg_mode, "{context}");
            assert!(
                std::fs::symlink_metadata(dir.join("pkg")).unwrap().is_dir(),
                "{context}"
            );
            assert_eq!(
                std::fs::read(dir.join("pkg/a.py")).unwrap(),
                b"good\n",
                "{context}"
            );
        }
    }
}

#[test]
fn capture_keeps_head_and_tail() {
    let text: Vec<u8> = (0..100u8).map(|i| b'a' + i % 26).collect();
    let out = capture(std::io::Cursor::new(text), 20).join().unwrap();
    assert!(out.starts_with("abcdefghij"), "{out}");
    assert!(out.contains("[... 80 bytes cut ...]"), "{out}");
    assert!(out.ends_with("mnopqrstuv"), "{out}");
}
