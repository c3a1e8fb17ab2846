// Writes the `openmrs assemble` configuration: the pinned modules of spa-modules.json,
// plus each optional module unless config.json turns it off (`"enabled": false`).
// Usage: node select-modules.mjs <spa-modules.json> <config.json> > spa-assemble-config.json
import { readFileSync } from "node:fs";

const [modulesFile, configFile] = process.argv.slice(2);
const modules = JSON.parse(readFileSync(modulesFile, "utf8"));
const config = JSON.parse(readFileSync(configFile, "utf8"));
const selected = { ...modules.frontendModules };
for (const [name, version] of Object.entries(modules.optionalFrontendModules ?? {})) {
  if (config[name]?.enabled !== false) {
    selected[name] = version;
  } else {
    process.stderr.write(`leaving out ${name}: disabled in ${configFile}\n`);
  }
}
process.stdout.write(JSON.stringify({ frontendModules: selected }, null, 2) + "\n");
