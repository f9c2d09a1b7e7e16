//! The history of executed cells (in memory, this kernel process only) and
//! `history_request`: `tail`, `range` and `search` with a glob pattern.

use serde_json::{json, Value as Json};

/// Entries report session 1: there is one session per kernel process, and
/// IPython's clients read 0 or a negative number as "the current one" too.
const SESSION: i64 = 1;

#[derive(Default)]
pub struct History {
    /// (execution count, input, text/plain of the result)
    entries: Vec<(u64, String, Option<String>)>,
}

impl History {
    pub fn push(&mut self, count: u64, input: &str, output: Option<String>) {
        self.entries.push((count, input.to_string(), output));
    }

    /// The `history` list of a history_reply for the request's content.
    pub fn request(&self, c: &Json) -> Vec<Json> {
        let output = c.get("output").and_then(Json::as_bool).unwrap_or(false);
        let int = |k: &str| c.get(k).and_then(Json::as_i64);
        let n = int("n").map(|n| n.max(0) as usize);
        let selected: Vec<&(u64, String, Option<String>)> =
            match c.get("hist_access_type").and_then(Json::as_str) {
                Some("tail") => tail(self.entries.iter().collect(), n.unwrap_or(10)),
                Some("range") => {
                    let session = int("session").unwrap_or(0);
                    if session != SESSION && session > 0 {
                        Vec::new()
                    } else {
                        // IPython's convention: `stop` is exclusive, negative
                        // values count back from the end, 0 means "to the end".
                        let last = self.entries.last().map_or(0, |e| e.0 as i64);
                        let start = int("start").unwrap_or(0);
                        let start = if start < 0 { last + 1 + start } else { start };
                        let stop = match int("stop") {
                            None | Some(0) => i64::MAX,
                            Some(s) if s < 0 => last + 1 + s,
                            Some(s) => s,
                        };
                        self.entries
                            .iter()
                            .filter(|e| (e.0 as i64) >= start && (e.0 as i64) < stop)
                            .collect()
                    }
                }
                Some("search") => {
                    let pattern = c.get("pattern").and_then(Json::as_str).unwrap_or("*");
                    let unique = c.get("unique").and_then(Json::as_bool).unwrap_or(false);
                    let mut found: Vec<&(u64, String, Option<String>)> = self
                        .entries
                        .iter()
                        .filter(|e| glob_match(pattern, &e.1))
                        .collect();
                    if unique {
                        // Keep the latest of each input, in history order.
                        let mut seen = std::collections::HashSet::new();
                        found.reverse();
                        found.retain(|e| seen.insert(e.1.as_str()));
                        found.reverse();
                    }
                    match n {
                        Some(n) => tail(found, n),
                        None => found,
                    }
                }
                _ => Vec::new(),
            };
        selected
            .into_iter()
            .map(|(count, input, out)| {
                if output {
                    json!([SESSION, count, [input, out]])
                } else {
                    json!([SESSION, count, input])
                }
            })
            .collect()
    }
}

fn tail<T>(mut v: Vec<T>, n: usize) -> Vec<T> {
    let skip = v.len().saturating_sub(n);
    v.drain(..skip);
    v
}

/// Shell-style glob over the whole text: `*` any run, `?` one character,
/// `[abc]`/`[a-z]`/`[!x]` classes (what IPython's history search accepts).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matcher with backtracking to the last `*`: linear in practice.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class_match(&p, pi, t[ti]) {
                        if matched {
                            pi = next;
                            ti += 1;
                            continue;
                        }
                    } else if t[ti] == '[' {
                        pi += 1;
                        ti += 1;
                        continue;
                    }
                }
                c if c == t[ti] => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Whether `c` is in the class starting at `p[start] == '['`, and the index
/// after the class; None if the class is not closed (then `[` is literal).
fn class_match(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() && (p[i] != ']' || first) {
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            matched |= p[i] <= c && c <= p[i + 2];
            i += 3;
        } else {
            matched |= p[i] == c;
            i += 1;
        }
    }
    (i < p.len()).then_some((matched != negate, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*", ""));
        assert!(glob_match("1*", "1 + 2"));
        assert!(glob_match("*sum(*)", "x.sum(axis=0)"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("a?c", "abc"));
        assert!(glob_match("[a-c]x", "bx"));
        assert!(!glob_match("[!a-c]x", "bx"));
        assert!(glob_match("a[", "a["));
    }

    #[test]
    fn tail_range_search() {
        let mut h = History::default();
        for (i, code) in ["x = 1", "x + 1", "y = 2", "x + 1"].iter().enumerate() {
            h.push(i as u64 + 1, code, None);
        }
        let tail = h.request(&json!({"hist_access_type": "tail", "n": 2}));
        assert_eq!(tail, vec![json!([1, 3, "y = 2"]), json!([1, 4, "x + 1"])]);
        let range =
            h.request(&json!({"hist_access_type": "range", "session": 1, "start": 2, "stop": 3}));
        assert_eq!(range, vec![json!([1, 2, "x + 1"])]);
        let search = |extra: Json| {
            let mut c = json!({"hist_access_type": "search", "pattern": "x*"});
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            h.request(&c).len()
        };
        assert_eq!(search(json!({})), 3);
        assert_eq!(search(json!({"unique": true})), 2);
        assert_eq!(search(json!({"n": 1})), 1);
        let with_output = h.request(&json!({"hist_access_type": "tail", "n": 1, "output": true}));
        assert_eq!(with_output, vec![json!([1, 4, ["x + 1", null]])]);
    }
}
