//! Matchers: how a scenario says what a frame, card or record must look
//! like, and how a scripted hook says which calls it applies to.
//!
//! An expected JSON value is matched against an actual one:
//!
//! * an object is a **partial** match: every key it names must match, other
//!   keys of the actual value are ignored;
//! * an array must have the same length, element by element;
//! * a scalar must be equal;
//! * an object with one `$`-key is an operator:
//!   `{"$contains": "text"}` (substring; for an array, every listed element
//!   matches some element, in order), `{"$regex": "^ls"}`,
//!   `{"$absent": true}` (the key is missing or null), `{"$exact": v}` (deep
//!   equality, extra keys count), `{"$any": true}` (present, any value),
//!   `{"$not": m}`.
//!
//! A mismatch is reported with the path where it happened.

use regex::Regex;
use serde_json::Value;

/// Matches `actual` against `expected`; `Err` says where and how it differs.
pub fn check(expected: &Value, actual: Option<&Value>) -> Result<(), String> {
    check_at("", expected, actual)
}

fn check_at(path: &str, expected: &Value, actual: Option<&Value>) -> Result<(), String> {
    let here = if path.is_empty() { "." } else { path };
    if let Some((op, arg)) = operator(expected) {
        return apply(here, path, op, arg, actual);
    }
    let Some(actual) = actual else {
        return Err(format!(
            "at {here}: expected {}, but it is absent",
            short(expected)
        ));
    };
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, want_value) in want {
                check_at(&format!("{path}.{key}"), want_value, got.get(key))?;
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                return Err(format!(
                    "at {here}: expected {} items, got {}: {}",
                    want.len(),
                    got.len(),
                    short(actual)
                ));
            }
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                check_at(&format!("{path}[{i}]"), w, Some(g))?;
            }
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!(
            "at {here}: expected {}, got {}",
            short(expected),
            short(actual)
        )),
    }
}

fn operator(expected: &Value) -> Option<(&str, &Value)> {
    let obj = expected.as_object()?;
    if obj.len() != 1 {
        return None;
    }
    let (key, arg) = obj.iter().next()?;
    key.starts_with('$').then_some((key.as_str(), arg))
}

fn apply(
    here: &str,
    path: &str,
    op: &str,
    arg: &Value,
    actual: Option<&Value>,
) -> Result<(), String> {
    match op {
        "$absent" => match actual {
            None | Some(Value::Null) => Ok(()),
            Some(v) => Err(format!("at {here}: expected absent, got {}", short(v))),
        },
        "$any" => match actual {
            Some(_) => Ok(()),
            None => Err(format!("at {here}: expected a value, but it is absent")),
        },
        "$exact" => match actual {
            Some(v) if v == arg => Ok(()),
            Some(v) => Err(format!(
                "at {here}: expected exactly {}, got {}",
                short(arg),
                short(v)
            )),
            None => Err(format!(
                "at {here}: expected exactly {}, but it is absent",
                short(arg)
            )),
        },
        "$not" => match check_at(path, arg, actual) {
            Ok(()) => Err(format!(
                "at {here}: expected not {}, got {}",
                short(arg),
                actual.map(short).unwrap_or_else(|| "nothing".into())
            )),
            Err(_) => Ok(()),
        },
        "$contains" => match (arg, actual) {
            (Value::String(needle), Some(Value::String(hay))) => {
                if hay.contains(needle.as_str()) {
                    Ok(())
                } else {
                    Err(format!(
                        "at {here}: expected to contain {needle:?}, got {}",
                        short_str(hay)
                    ))
                }
            }
            (Value::Array(wanted), Some(Value::Array(items))) => {
                let mut from = 0;
                for (n, want) in wanted.iter().enumerate() {
                    let found = items[from..]
                        .iter()
                        .position(|item| check_at(path, want, Some(item)).is_ok());
                    match found {
                        Some(i) => from += i + 1,
                        None => {
                            return Err(format!(
                                "at {here}: no element (after the previous ones) matches item {n} {}; got {}",
                                short(want),
                                short(actual.unwrap_or(&Value::Null))
                            ));
                        }
                    }
                }
                Ok(())
            }
            (_, Some(v)) => Err(format!(
                "at {here}: cannot look for {} in {}",
                short(arg),
                short(v)
            )),
            (_, None) => Err(format!(
                "at {here}: expected to contain {}, but it is absent",
                short(arg)
            )),
        },
        "$regex" => {
            let Some(pattern) = arg.as_str() else {
                return Err(format!("at {here}: $regex needs a string pattern"));
            };
            let re =
                regex(pattern).map_err(|e| format!("at {here}: bad $regex {pattern:?}: {e}"))?;
            match actual {
                Some(Value::String(s)) if re.is_match(s) => Ok(()),
                Some(Value::String(s)) => Err(format!(
                    "at {here}: expected to match /{pattern}/, got {}",
                    short_str(s)
                )),
                Some(v) => Err(format!(
                    "at {here}: expected a string matching /{pattern}/, got {}",
                    short(v)
                )),
                None => Err(format!(
                    "at {here}: expected a string matching /{pattern}/, but it is absent"
                )),
            }
        }
        other => Err(format!("at {here}: unknown matcher {other}")),
    }
}

/// A compiled regex, from a per-thread cache: matchers and scripted hooks
/// run the same few patterns on every call, and compiling one costs far
/// more than matching it.
pub fn regex(pattern: &str) -> Result<Regex, regex::Error> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    const MAX: usize = 512;
    thread_local! {
        static CACHE: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
    }
    if let Some(re) = CACHE.with(|c| c.borrow().get(pattern).cloned()) {
        return Ok(re);
    }
    let re = Regex::new(pattern)?;
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= MAX {
            c.clear();
        }
        c.insert(pattern.to_owned(), re.clone());
    });
    Ok(re)
}

/// Finds `wanted` as an ordered subsequence of `items`; `Err` names the
/// first expected item that has no match after the previous ones.
pub fn subsequence(wanted: &[Value], items: &[Value]) -> Result<(), String> {
    let mut from = 0;
    for (n, want) in wanted.iter().enumerate() {
        match items[from..]
            .iter()
            .position(|item| check(want, Some(item)).is_ok())
        {
            Some(i) => from += i + 1,
            None => {
                let closest = items[from..]
                    .iter()
                    .filter_map(|item| check(want, Some(item)).err())
                    .next()
                    .unwrap_or_else(|| "no items left".into());
                return Err(format!(
                    "item {n} {} not found (in order); e.g. {closest}",
                    short(want)
                ));
            }
        }
    }
    Ok(())
}

/// A value, shortened for a report line.
pub fn short(v: &Value) -> String {
    short_str(&v.to_string())
}

/// A frame, shortened for the line under a failed requirement.
pub fn short_frame(v: &Value) -> String {
    crate::text::shorten(&v.to_string(), 601)
}

fn short_str(s: &str) -> String {
    crate::text::shorten(s, 161)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_match_partially_and_arrays_exactly() {
        let actual = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}});
        assert!(check(&json!({"b": {"c": [1, 2]}}), Some(&actual)).is_ok());
        let err = check(&json!({"b": {"c": [1]}}), Some(&actual)).unwrap_err();
        assert!(err.contains("at .b.c: expected 1 items, got 2"), "{err}");
        let err = check(&json!({"b": {"d": "y"}}), Some(&actual)).unwrap_err();
        assert_eq!(err, "at .b.d: expected \"y\", got \"x\"");
    }

    #[test]
    fn operators() {
        let actual = json!({"title": "ls -la", "items": [1, 2, 3], "none": null});
        assert!(check(&json!({"title": {"$contains": "-la"}}), Some(&actual)).is_ok());
        assert!(check(&json!({"title": {"$regex": "^ls"}}), Some(&actual)).is_ok());
        assert!(check(&json!({"title": {"$regex": "^rm"}}), Some(&actual)).is_err());
        assert!(
            check(
                &json!({"missing": {"$absent": true}, "none": {"$absent": true}}),
                Some(&actual)
            )
            .is_ok()
        );
        assert!(check(&json!({"title": {"$absent": true}}), Some(&actual)).is_err());
        assert!(check(&json!({"items": {"$contains": [1, 3]}}), Some(&actual)).is_ok());
        assert!(check(&json!({"items": {"$contains": [3, 1]}}), Some(&actual)).is_err());
        assert!(
            check(
                &json!({"title": {"$not": {"$contains": "rm"}}}),
                Some(&actual)
            )
            .is_ok()
        );
        assert!(check(&json!({"$exact": {"title": "ls -la"}}), Some(&actual)).is_err());
        assert!(check(&json!({"title": {"$any": true}}), Some(&actual)).is_ok());
    }

    #[test]
    fn subsequences_keep_order() {
        let items = vec![json!({"k": 1}), json!({"k": 2}), json!({"k": 3})];
        assert!(subsequence(&[json!({"k": 1}), json!({"k": 3})], &items).is_ok());
        assert!(subsequence(&[json!({"k": 3}), json!({"k": 1})], &items).is_err());
    }
}
