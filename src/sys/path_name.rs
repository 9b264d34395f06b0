//! Names safe as one path component, for ids and labels that come from
//! datasets and users.

/// A name safe as one path component: kept when it is plain, else its
/// plain characters, `~` and a hash of the whole name. A plain name never
/// holds `~`, so no name kept as it is can be another's escaped form
/// (`org_model~c87c0c64` is only ever `org/model`'s).
pub fn slug(name: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if !name.is_empty() && name.chars().all(plain) && !name.starts_with('.') && name.len() <= 120 {
        return name.to_string();
    }
    use sha2::{Digest, Sha256};
    let hash = hex::encode(&Sha256::digest(name.as_bytes())[..8]);
    let kept: String = name
        .chars()
        .map(|c| if plain(c) { c } else { '_' })
        .take(80)
        .collect();
    format!("{}~{hash}", kept.trim_start_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_one_component_and_keep_names_apart() {
        assert_eq!(slug("django__django-11099"), "django__django-11099");
        let a = slug("org/model-v1");
        let b = slug("org_model-v1");
        assert_ne!(a, b);
        assert!(!a.contains('/'));
        assert!(!slug("..").starts_with('.'));
        assert!(!slug("../../etc").contains('/'));
        assert!(!slug("").is_empty());
        // An escaped name cannot be claimed by a plain one that copies it.
        let escaped = slug("org/model");
        assert_ne!(slug(&escaped), escaped);
        assert_ne!(slug(&escaped.replace('~', "-")), escaped);
    }
}
