//! Arbitrary bytes as a global-property file and as an address configuration.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    compiler::compile_files(vec![
        ("globalproperties/fuzz.xml".into(), data.to_vec()),
        ("addresshierarchy/addressConfiguration.xml".into(), data.to_vec()),
    ]);
});
