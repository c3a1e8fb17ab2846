// Checks that every key config.json gives a built front-end module is one the module's
// configuration schema defines, so a setting put under the wrong module (or one a version
// no longer has) fails the build instead of being ignored in the browser.
//
// The schema is looked for in the module's built JavaScript: a key is known when it
// appears as an object key whose value is a schema entry (`key:{_type…`, `key:{_default…`)
// or a group of them (`key:{child:{_type…`, a few levels deep). That is a reading of
// minified code, not of the schema object itself: it can accept a key that only looks
// defined, and does not reject defined ones. Modules not in the build (`"enabled": false`)
// and the framework's own (`@openmrs/esm-styleguide`) are not checked.
//
// Usage: node check-config-keys.mjs <built spa folder> <config.json>
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

// Keys every module accepts (the framework's implicit schema).
const IMPLICIT = new Set(["Display conditions", "Translation overrides", "extensionSlots", "extensions"]);

const [spa, configFile] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configFile, "utf8"));

/** The concatenated JavaScript of a built module, or null if it is not in the build. */
function bundleText(module) {
  const prefix = "openmrs-" + module.replace(/^@openmrs\//, "").replace(/\//g, "-") + "-";
  const folders = readdirSync(spa)
    .filter((name) => name.startsWith(prefix) && statSync(join(spa, name)).isDirectory())
    .sort();
  if (folders.length === 0) return null;
  return folders
    .flatMap((folder) =>
      readdirSync(join(spa, folder))
        .filter((f) => f.endsWith(".js"))
        .sort()
        .map((f) => readFileSync(join(spa, folder, f), "utf8")),
    )
    .join("\n");
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function defined(text, key) {
  const name = escape(key);
  // `key:{` then, within three nested objects, a schema entry's marker.
  const pattern = new RegExp(`[{,]\\s*"?${name}"?:\\{(?:[^{}]{0,200}?:\\{){0,3}\\s*_(?:type|default|elements)\\b`);
  return pattern.test(text);
}

let checked = 0;
const problems = [];
for (const [module, settings] of Object.entries(config)) {
  const text = bundleText(module);
  if (text === null || typeof settings !== "object" || settings === null) continue;
  for (const key of Object.keys(settings)) {
    if (IMPLICIT.has(key)) continue;
    checked += 1;
    if (!defined(text, key)) {
      problems.push(`${configFile}: ${module}: '${key}' is not in the module's configuration schema`);
    }
  }
}
for (const p of problems) process.stderr.write(p + "\n");
process.stdout.write(`front-end configuration: ${checked} keys checked, ${problems.length} unknown\n`);
process.exit(problems.length ? 1 : 0);
