// Builds the distribution's own O3 modules (modules/*, each an ordinary O3 front-end module
// built with the framework's rspack configuration) into the assembled application, and
// registers each in its import map and routes registry as `openmrs assemble` registers
// the modules it downloads.
// Usage: node local-modules.mjs <target-folder>
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const target = resolve(process.argv[2] ?? "spa");
const rspack = join(here, "node_modules", ".bin", "rspack");
const importmapFile = join(target, "importmap.json");
const routesFile = join(target, "routes.registry.json");
const importmap = JSON.parse(readFileSync(importmapFile, "utf8"));
const routes = JSON.parse(readFileSync(routesFile, "utf8"));

const modulesDir = join(here, "modules");
for (const folder of readdirSync(modulesDir).sort()) {
  const dir = join(modulesDir, folder);
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const dist = join(dir, dirname(pkg.browser));
  rmSync(dist, { recursive: true, force: true });
  execFileSync(rspack, ["build", "--mode", "production", "-c", "rspack.config.js"], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
  const entry = basename(pkg.browser);
  if (!existsSync(join(dist, entry))) throw new Error(`${pkg.name}: the build produced no ${entry}`);
  // The folder is named after the built files' content: their names carry no hash, and
  // browsers keep every script for a year, so a changed module must live at a new address.
  const digest = createHash("sha256");
  for (const file of readdirSync(dist).sort()) digest.update(file).update(readFileSync(join(dist, file)));
  const slug = `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}-${digest.digest("hex").slice(0, 10)}`;
  // Earlier builds of the module (run on an assembled application again) go.
  const unversioned = slug.slice(0, slug.lastIndexOf(`-${pkg.version}-`));
  for (const old of readdirSync(target)) {
    if (old.startsWith(`${unversioned}-`)) rmSync(join(target, old), { recursive: true, force: true });
  }
  cpSync(dist, join(target, slug), { recursive: true });
  importmap.imports[pkg.name] = `./${slug}/${entry}`;
  routes[pkg.name] = JSON.parse(readFileSync(join(dist, "routes.json"), "utf8"));
  console.log(`built ${pkg.name} ${pkg.version} into ${slug}`);
}
writeFileSync(importmapFile, JSON.stringify(importmap));
writeFileSync(routesFile, JSON.stringify(routes));
