//! The hostile-input table (`tests/hostile.txt`): each case an entry and
//! what it must give, an error class or the exact text it prints. Read by
//! the suites that run it through the front ends (scripts, the REPL, the
//! Jupyter kernel, a memory-limited run); the format is described at the
//! top of the table.

/// What a case must give.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// An error of one of these classes, whose message contains the text
    /// (lower-cased comparison; empty: anything).
    Error {
        kinds: Vec<String>,
        contains: String,
    },
    /// Success, printing exactly this on stdout.
    Printed(String),
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct Case {
    /// The row's line in the table: `hostile.txt:LINE` names the case.
    pub line: usize,
    /// The code as written in the table.
    pub raw: String,
    /// The code to run (escapes and repetitions expanded).
    pub code: String,
    pub expect: Expect,
    /// Also run under `ulimit -v`.
    pub mem: bool,
    /// Run only under `ulimit -v`.
    pub mem_only: bool,
    /// Not typed at the REPL (input it reads as incomplete, or a line too
    /// long to type).
    pub no_repl: bool,
}

impl Case {
    /// `hostile.txt:LINE: CODE` (the code shortened), for failure messages.
    pub fn label(&self) -> String {
        let mut raw: String = self.raw.chars().take(100).collect();
        if raw.len() < self.raw.len() {
            raw.push('…');
        }
        format!("hostile.txt:{}: {raw}", self.line)
    }
}

/// `\n` a line break, `\t` a tab, `«S*N»` S repeated N times.
pub fn expand(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(start) = rest.find('«') {
        out.push_str(&rest[..start]);
        let after = &rest[start + '«'.len_utf8()..];
        let end = after
            .find('»')
            .unwrap_or_else(|| panic!("unclosed « in {code}"));
        let body = &after[..end];
        let (s, n) = body
            .rsplit_once('*')
            .unwrap_or_else(|| panic!("«S*N» without * in {code}"));
        let n: usize = n.parse().unwrap_or_else(|_| panic!("bad count in {code}"));
        out.push_str(&s.repeat(n));
        rest = &after[end + '»'.len_utf8()..];
    }
    out.push_str(rest);
    out.replace("\\n", "\n").replace("\\t", "\t")
}

/// Parse the table's text.
pub fn parse(table: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, line) in table.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (head, raw) = line
            .split_once(" | ")
            .unwrap_or_else(|| panic!("hostile.txt:{}: no ` | ` in {line}", i + 1));
        let mut head = head.trim();
        let (mut mem, mut mem_only, mut no_repl) = (false, false, false);
        while let Some(rest) = head.strip_prefix('@') {
            let (tag, after) = rest.split_once(' ').unwrap_or((rest, ""));
            match tag {
                "mem" => mem = true,
                "memonly" => mem_only = true,
                "norepl" => no_repl = true,
                _ => panic!("hostile.txt:{}: unknown tag @{tag}", i + 1),
            }
            head = after.trim_start();
        }
        let expect = if let Some(text) = head.strip_prefix('=') {
            Expect::Printed(format!("{}\n", text.trim_start().replace("\\n", "\n")))
        } else {
            let (kinds, contains) = head.split_once('~').unwrap_or((head, ""));
            let kinds: Vec<String> = kinds.trim().split('/').map(str::to_string).collect();
            assert!(
                kinds
                    .iter()
                    .all(|k| !k.is_empty() && k.chars().all(char::is_alphanumeric)),
                "hostile.txt:{}: bad expectation {head:?}",
                i + 1
            );
            Expect::Error {
                kinds,
                contains: contains.trim().to_lowercase(),
            }
        };
        cases.push(Case {
            line: i + 1,
            raw: raw.to_string(),
            code: expand(raw),
            expect,
            mem: mem || mem_only,
            mem_only,
            no_repl,
        });
    }
    cases
}

/// Whether `text` (an error report) names one of `kinds` as its error: a
/// line that starts with `Kind:` (after a traceback, or alone).
pub fn names_error(text: &str, kinds: &[String]) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        kinds.iter().any(|k| {
            l.strip_prefix(k.as_str())
                .is_some_and(|r| r.starts_with(':'))
        })
    })
}

/// Whether `text` has a `NAME:LINE:COL` place for the file `name`.
pub fn has_place(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let rest = &text[i + name.len()..];
        let mut parts = rest.splitn(3, ':');
        parts.next() == Some("")
            && parts
                .next()
                .is_some_and(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_digit()))
            && parts
                .next()
                .is_some_and(|c| c.starts_with(|ch: char| ch.is_ascii_digit()))
    })
}

/// Whether `text` has a `:LINE:COL` place (`file:3:7`).
pub fn has_line_col(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len()).any(|i| {
        if b[i] != b':' {
            return false;
        }
        let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
        let n = digits(i + 1);
        n > 0 && b.get(i + 1 + n) == Some(&b':') && digits(i + 2 + n) > 0
    })
}

/// The fixture files the load cases read, as (name, bytes).
pub fn fixtures() -> Vec<(&'static str, Vec<u8>)> {
    let npy = |descr: &str, shape: &str, data: &[u8]| -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    };
    let mut u64s = 1u64.to_le_bytes().to_vec();
    u64s.extend_from_slice(&(1u64 << 63).to_le_bytes());
    vec![
        ("not_npy.txt", b"hello, not an array\n".to_vec()),
        ("truncated.npy", npy("<f4", "(10,)", &[0; 8])),
        ("u64.npy", npy("<u8", "(2,)", &u64s)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse() {
        let cases = parse(
            "# c\n@mem MemoryError | x = [0] * «1*3»\n= a\\nb | print(1)\nSyntaxError ~ tab | if 1:\\n\\tx\n",
        );
        assert_eq!(cases.len(), 3);
        assert!(cases[0].mem && !cases[0].mem_only);
        assert_eq!(cases[0].code, "x = [0] * 111");
        assert_eq!(cases[1].expect, Expect::Printed("a\nb\n".into()));
        assert_eq!(cases[2].code, "if 1:\n\tx");
        assert!(has_place("boom at case3.arr:1:5\n", "case3.arr"));
        assert!(!has_place("case3.arr: x", "case3.arr"));
        assert!(has_line_col("at <stdin>:12:3") && !has_line_col("a:b:1 and 3:"));
        assert!(names_error(
            "Traceback\n  x\nValueError: no",
            &["ValueError".into()]
        ));
    }
}
