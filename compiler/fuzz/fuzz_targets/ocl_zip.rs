//! Arbitrary bytes as an OCL archive, raw and as the export.json inside a valid zip.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let mut zipped = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut zipped);
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        z.start_file("export.json", options).unwrap();
        z.write_all(data).unwrap();
        z.finish().unwrap();
    }
    compiler::compile_files(vec![
        ("ocl/a_raw_v1_autoexpand-1.zip".into(), data.to_vec()),
        ("ocl/b_json_v1_autoexpand-1.zip".into(), zipped.into_inner()),
    ]);
});
