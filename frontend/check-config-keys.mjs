// Checks that every setting config.json gives a built front-end module is one the module's
// configuration schema defines, at the path it is written (`concepts.visitDiagnosesConceptUuid`
// is not `visitDiagnosesConceptUuid`), so a setting put under the wrong module or at the
// wrong level, or one a version no longer has, fails the build instead of being ignored
// in the browser.
//
// The schemas are read from the modules' built JavaScript with a JavaScript parser (acorn):
// a schema is an object literal whose properties hold schema entries (objects with `_type`
// or `_default`) or groups of them. A module's extensions may define schemas of their own;
// every schema found in the module's bundle counts, so a key of an extension's schema is
// accepted at the module's level too. Below an entry (an array or object of `_elements`)
// the keys are data, not settings, and are not checked. Modules not in the build
// (`"enabled": false`), the framework's own (`@openmrs/esm-styleguide`) and the shell's
// `core` translation overrides are not checked.
//
// Usage: node check-config-keys.mjs <built spa folder> <config.json>
// Also imported by the browser test, which uses `undefinedSettings` to tell the framework's
// false "Unknown config key" messages (a module's extension rendered before the module
// registered its schema) from real ones.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as acorn from "acorn";

// Keys every module accepts (the framework's implicit schema).
const IMPLICIT = new Set(["Display conditions", "Translation overrides", "extensionSlots", "extensions"]);
const UNCHECKED = new Set(["@openmrs/esm-styleguide", "core"]);

/** The built JavaScript files of a module, or null if it is not in the build. */
function bundleFiles(spa, module) {
  const prefix = "openmrs-" + module.replace(/^@openmrs\//, "").replace(/\//g, "-") + "-";
  const folders = readdirSync(spa)
    .filter((name) => name.startsWith(prefix) && statSync(join(spa, name)).isDirectory())
    .sort();
  if (folders.length === 0) return null;
  return folders.flatMap((folder) =>
    readdirSync(join(spa, folder))
      .filter((f) => f.endsWith(".js"))
      .sort()
      .map((f) => join(spa, folder, f)),
  );
}

const keyName = (p) => p.key && (p.key.type === "Identifier" ? p.key.name : p.key.value);
const isEntry = (o) =>
  o.type === "ObjectExpression" && o.properties.some((p) => ["_type", "_default"].includes(keyName(p)));
// Object literals bound to names in the file being read (`var r = {…}`): a schema may
// hold another by name (`visitNoteConfig: r`). Minified names can repeat across scopes; a
// name bound to a schema-like object wins.
let bindings = new Map();
const bound = (node) => (node && node.type === "Identifier" ? bindings.get(node.name) ?? node : node);
const holdsEntries = (o, depth = 0) => {
  o = bound(o);
  return (
    o.type === "ObjectExpression" &&
    depth < 7 &&
    (isEntry(o) || o.properties.some((p) => p.value && holdsEntries(p.value, depth + 1)))
  );
};

/** Every setting path the schemas in these files define: "a", "a.b"; entries end in "!". */
function pathsIn(files) {
  const paths = new Set();
  const collect = (object, prefix) => {
    for (const p of object.properties) {
      const key = keyName(p);
      const value = bound(p.value);
      if (!key || !value || value.type !== "ObjectExpression") continue;
      const path = prefix ? `${prefix}.${key}` : key;
      if (isEntry(value)) {
        paths.add(path);
        paths.add(path + "!");
      } else if (holdsEntries(value)) {
        paths.add(path);
        collect(value, path);
      }
    }
  };
  for (const file of files) {
    const source = readFileSync(file, "utf8");
    let ast;
    try {
      ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "script" });
    } catch {
      try {
        ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "module" });
      } catch {
        continue;
      }
    }
    bindings = new Map();
    const bind = (node) => {
      if (!node || typeof node.type !== "string") return;
      if (node.type === "VariableDeclarator" && node.id?.type === "Identifier" && node.init?.type === "ObjectExpression") {
        const known = bindings.get(node.id.name);
        if (!known || (!holdsEntries(known) && holdsEntries(node.init))) bindings.set(node.id.name, node.init);
      }
      for (const value of Object.values(node)) {
        if (Array.isArray(value)) value.forEach((child) => child && typeof child.type === "string" && bind(child));
        else if (value && typeof value.type === "string") bind(value);
      }
    };
    bind(ast);
    // A schema handed to the framework (`(0, x.defineConfigSchema)(name, schema)`), however
    // few settings it has; otherwise outermost object literals with at least two settings.
    const calls = (node, name) => {
      let callee = node.callee;
      if (callee?.type === "SequenceExpression") callee = callee.expressions.at(-1);
      const called = callee?.type === "MemberExpression" ? keyName({ key: callee.property }) : callee?.name;
      return node.type === "CallExpression" && called === name;
    };
    const walk = (node) => {
      if (!node || typeof node.type !== "string") return;
      if (calls(node, "defineConfigSchema") && node.arguments[1]) {
        const schema = bound(node.arguments[1]);
        if (schema.type === "ObjectExpression") collect(schema, "");
      }
      if (
        node.type === "ObjectExpression" &&
        !isEntry(node) &&
        node.properties.filter((p) => p.value && holdsEntries(p.value)).length >= 2
      ) {
        collect(node, "");
        return;
      }
      for (const value of Object.values(node)) {
        if (Array.isArray(value)) value.forEach((child) => child && typeof child.type === "string" && walk(child));
        else if (value && typeof value.type === "string") walk(value);
      }
    };
    walk(ast);
  }
  return paths;
}

const cache = new Map();
/** The setting paths a built module's schemas define, or null if it is not in the build. */
export function schemaPaths(spa, module) {
  const key = `${spa}\0${module}`;
  if (!cache.has(key)) {
    const files = bundleFiles(spa, module);
    cache.set(key, files === null ? null : pathsIn(files));
  }
  return cache.get(key);
}

/** The paths of `settings` (one module's configuration) that its schemas do not define. */
export function undefinedSettings(paths, settings, prefix = "") {
  const missing = [];
  for (const [key, value] of Object.entries(settings)) {
    if (!prefix && IMPLICIT.has(key)) continue;
    const path = prefix ? `${prefix}.${key}` : key;
    if (!paths.has(path)) {
      missing.push(path);
    } else if (!paths.has(path + "!") && value && typeof value === "object" && !Array.isArray(value)) {
      missing.push(...undefinedSettings(paths, value, path));
    }
  }
  return missing;
}

// The command line.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [spa, configFile] = process.argv.slice(2);
  const config = JSON.parse(readFileSync(configFile, "utf8"));
  let checked = 0;
  const problems = [];
  for (const [module, settings] of Object.entries(config)) {
    if (UNCHECKED.has(module) || typeof settings !== "object" || settings === null) continue;
    const paths = schemaPaths(spa, module);
    if (paths === null) continue;
    checked += Object.keys(settings).filter((k) => !IMPLICIT.has(k)).length;
    for (const path of undefinedSettings(paths, settings)) {
      problems.push(`${configFile}: ${module}: '${path}' is not in the module's configuration schema`);
    }
  }
  for (const p of problems) process.stderr.write(p + "\n");
  process.stdout.write(`front-end configuration: ${checked} keys checked, ${problems.length} unknown\n`);
  process.exit(problems.length ? 1 : 0);
}
