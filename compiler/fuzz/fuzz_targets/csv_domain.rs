//! Arbitrary bytes as CSV files of several domains (with references between them).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the domain, so one corpus covers several row processors.
    let domains = ["concepts", "locations", "roles", "patientidentifiertypes", "idgen", "drugs", "programworkflowstates", "queues"];
    let Some((&pick, rest)) = data.split_first() else { return };
    let domain = domains[pick as usize % domains.len()];
    compiler::compile_files(vec![(format!("{domain}/fuzz.csv"), rest.to_vec())]);
});
