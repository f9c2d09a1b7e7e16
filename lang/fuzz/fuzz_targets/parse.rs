//! Fuzz target: the front end must never panic, whatever the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let file = arr_lang::SourceFile::new("fuzz.arr", text);
    match arr_lang::parse(&file) {
        Ok(module) => {
            let _ = arr_lang::pretty::module_to_string(&module);
        }
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                assert!(diagnostic.span.start <= diagnostic.span.end);
                assert!(diagnostic.span.end as usize <= text.len());
                let _ = diagnostic.render(&file);
            }
        }
    }
    let _ = arr_lang::check_complete(text);
    let _ = arr_lang::highlight(text);
});
