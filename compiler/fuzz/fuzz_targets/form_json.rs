//! Arbitrary bytes as an AMPATH form and as a form translation.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    compiler::compile_files(vec![
        ("ampathforms/fuzz.json".into(), data.to_vec()),
        ("ampathformstranslations/fuzz.json".into(), data.to_vec()),
    ]);
});
