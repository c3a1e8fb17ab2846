//! Inputs that must end in diagnostics, never in a panic: oversized files, archives with
//! lying headers, and arbitrary bytes in every kind of file the compiler reads.

use crate::fixture::{write, zip_of};
use compiler::vfs::Selection;

fn compile_dir(root: &std::path::Path) -> Vec<String> {
    compiler::compile(root, &Selection::distro(), &compiler::NoProgress)
        .diagnostics
        .into_iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn an_oversized_file_is_reported_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openmrs_config/concepts/huge.csv");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // A sparse file: large on paper, nothing on disk.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(compiler::source::MAX_FILE_BYTES + 1)
        .unwrap();
    assert_eq!(compile_dir(dir.path()), ["E0003"]);
}

/// A small deterministic generator, so failures reproduce.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut out = seed.to_vec();
        let edits = 1 + self.next() % 8;
        for _ in 0..edits {
            let pos = if out.is_empty() {
                0
            } else {
                (self.next() as usize) % out.len()
            };
            match self.next() % 4 {
                0 if !out.is_empty() => out[pos] = self.next() as u8,
                1 => out.insert(pos, b",;:\"{}[]<>\n\r\\"[(self.next() % 13) as usize]),
                2 if !out.is_empty() => {
                    out.remove(pos);
                }
                _ => out.truncate(pos),
            }
        }
        out
    }
}

#[test]
fn mutated_inputs_of_every_kind_never_panic() {
    let seeds: [(&str, &[u8]); 10] = [
        ("content.properties", b"name=${project.artifactId}\nversion=1.0-${x\ncontent.dep=[1.0,2.0)\nomod.fhir2=>=2.5.0 || ^1\nwar.openmrs=[2.6]]\n"),
        ("content-packages/dep/content.properties", b"version=${project.version}\ncontent.dep=~1.2\n"),
        ("content-packages/dep/pom.xml", b"<project><parent><version>1.5.0-SNAPSHOT</version></parent><artifactId>dep</artifactId></project>"),
        ("content-packages/dep/openmrs_config/cashpoints/c.csv", b"Uuid,Name,Location\n,Caisse,Nowhere\n"),
        ("openmrs_config/concepts/c.csv", b"Uuid,Fully specified name:en,Data class,Data type,Answers\n1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,\"Yes, sure\",Misc,Coded,No;x\n"),
        ("openmrs_config/locations/l.csv", b"Uuid,Name,Parent,Tag|Login Location\n3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10,Ward,Ward,true\n"),
        ("openmrs_config/globalproperties/g.xml", b"<config><globalProperties><globalProperty><property>a</property><value>&amp;b</value></globalProperty></globalProperties></config>"),
        ("openmrs_config/ampathforms/f.json", b"{\"name\":\"F\",\"version\":\"1\",\"published\":true,\"retired\":false,\"encounter\":\"E\",\"pages\":[{\"sections\":[{\"questions\":[{\"questionOptions\":{\"concept\":\"x\"}}]}]}]}"),
        ("openmrs_config/messageproperties/m_fr.properties", b"a=b\\\nc\nd:\\u00e9\n"),
        ("openmrs_config/addresshierarchy/addressConfiguration.xml", b"<addressConfiguration><addressComponents><addressComponent><field>COUNTRY</field></addressComponent></addressComponents></addressConfiguration>"),
    ];
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for round in 0..60 {
        let dir = tempfile::tempdir().unwrap();
        for (path, seed) in &seeds {
            write(dir.path(), path, &rng.bytes(seed));
        }
        let export = rng.bytes(br#"{"concepts":[{"id":"1","url":"/u/1/","external_id":"1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","names":[{"name":"n","locale":"en"}]}],"mappings":[{"map_type":"Q-AND-A","from_concept_url":"/u/1/","to_concept_url":"/u/2/"}]}"#);
        let member = String::from_utf8_lossy(&export).into_owned();
        let mut zip = zip_of(&[("export.json".into(), member)]);
        if round % 3 == 0 {
            zip = rng.bytes(&zip);
        }
        write(
            dir.path(),
            "openmrs_config/ocl/a_b_v1_autoexpand-1.zip",
            &zip,
        );
        // Must return, whatever it reports.
        let _ = compile_dir(dir.path());
    }
}
